#!/usr/bin/env bash
# The suite, as `make test` runs it (after scripts/setup.sh). Steps, and why in this order:
#
# 1. Lint and types (scripts/lint.sh: ruff check, mypy, a reason on every noqa), in seconds, before any stack.
# 2. Session 1, every test not marked own_stack, on the current release (the default, monitor/core/kafka_versions.py).
#    Its unit tests come first (tests/conftest.py orders them) and use one core for about three minutes. Beside
#    session 1, in the background, one after another, each on a stack of its own on its own ports
#    (KAFKA_HEALTH_TEST_PORT_BASE 19600, clear of session 1's 19700-19990), with their own jar cache and Maven
#    repository (Maven 3.8 does not lock ~/.m2 against a second Maven writing it):
#    a. the tests marked own_stack (but the client-fault module): they assert on what a Prometheus holds, so they get
#       a stack that no other test has fed;
#    b. the version matrix's other lines: the version-sensitive subset (marker kafka_versions) on Kafka 3.9 (the
#       heavier line: it kills a broker, and client telemetry has another interface there), then on 4.1.
#    Their output is printed when session 1 ends; a failure fails the suite. (Each ran alone after session 1 until
#    the suite went over its 45 minutes; side by side with session 1 the first trials passed and session 1 took no
#    longer: see the issue notes. Beside the own-stack session instead, under other load, the 3.9 line had failed.)
# 3. The client-fault module brings its own stack (its brokers listen on a network namespace's address); it runs
#    last, alone: run beside the own-stack tests its slow reader missed its backlog alert in CI (2 cores shared by two
#    stacks), alone it passed every run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
CLIENT_FAULTS=tests/e2e/test_alert_client_faults.py
BACKGROUND_LINES="3.9 4.1"

scripts/lint.sh

bg=$(mktemp -d /tmp/kafka-health-matrix.XXXXXX)
(
  export KAFKA_HEALTH_TEST_PORT_BASE=19600
  export KAFKA_HEALTH_CACHE_DIR=$bg/cache MAVEN_OPTS="${MAVEN_OPTS:-} -Dmaven.repo.local=$bg/m2"
  echo "--- own-stack tests (Kafka default)"
  $PY -m pytest tests -m own_stack --ignore=$CLIENT_FAULTS --durations=8 -p no:cacheprovider --basetemp="$bg/pytest-own" \
    || exit
  for v in $BACKGROUND_LINES; do
    echo "--- Kafka $v subset"
    KAFKA_HEALTH_TEST_KAFKA_VERSION=$v $PY -m pytest tests -m kafka_versions --durations=5 -p no:cacheprovider \
      --basetemp="$bg/pytest-$v" || exit
  done
) >"$bg/log" 2>&1 &
bg_pid=$!

session1=0
$PY -m pytest tests -m "not own_stack" --durations=40 || session1=$?
line=0
wait "$bg_pid" || line=$?
echo "--- own-stack tests, Kafka $BACKGROUND_LINES subsets (ran beside session 1; exit $line)"
cat "$bg/log"
[ "$line" -ne 0 ] || rm -rf "$bg"
[ "$session1" -eq 0 ] || exit "$session1"
[ "$line" -eq 0 ] || exit "$line"

$PY -m pytest $CLIENT_FAULTS -m own_stack --durations=4
