#!/usr/bin/env bash
# The suite, as `make test` runs it (after scripts/setup.sh). Steps, and why in this order:
#
# 1. Lint and types (scripts/lint.sh: ruff check, mypy, a reason on every noqa), in seconds, before any stack.
# 2. Session 1, every test not marked own_stack, on the current release (the default, monitor/core/kafka_versions.py).
#    Its unit tests come first (tests/conftest.py orders them) and use one core for about two minutes; beside them, in
#    the background, the version-sensitive subset (marker kafka_versions) on Kafka 4.1, the lightest line: its own
#    stack on its own ports (KAFKA_HEALTH_TEST_PORT_BASE 19600, clear of the sessions' 19700-19990), its own jar cache
#    and Maven repository (Maven 3.8 does not lock ~/.m2 against a second Maven writing it). Its output is printed
#    when session 1 ends; its failure fails the suite.
# 3. Session 2: the tests marked own_stack assert on what a Prometheus holds, so they get a stack of their own that no
#    other test has fed. Of those, the client-fault module brings its own stack (its brokers listen on a network
#    namespace's address); it runs after the others, alone: run beside them its slow reader missed its backlog alert
#    in CI (2 cores shared by two stacks), alone it passed every run.
# 4. The version matrix's other line, 3.9: the subset on a fresh stack of its own, alone (it kills a broker and
#    times the page).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
CLIENT_FAULTS=tests/e2e/test_alert_client_faults.py
BACKGROUND_LINE=4.1
OTHER_LINES="3.9"

scripts/lint.sh

bg=$(mktemp -d /tmp/kafka-health-matrix.XXXXXX)
(
  export KAFKA_HEALTH_TEST_KAFKA_VERSION=$BACKGROUND_LINE KAFKA_HEALTH_TEST_PORT_BASE=19600
  export KAFKA_HEALTH_CACHE_DIR=$bg/cache MAVEN_OPTS="${MAVEN_OPTS:-} -Dmaven.repo.local=$bg/m2"
  exec $PY -m pytest tests -m kafka_versions --durations=5 -p no:cacheprovider --basetemp="$bg/pytest"
) >"$bg/log" 2>&1 &
bg_pid=$!

session1=0
$PY -m pytest tests -m "not own_stack" --durations=15 || session1=$?
line=0
wait "$bg_pid" || line=$?
echo "--- Kafka $BACKGROUND_LINE subset (ran beside session 1; exit $line)"
cat "$bg/log"
[ "$line" -ne 0 ] || rm -rf "$bg"
[ "$session1" -eq 0 ] || exit "$session1"
[ "$line" -eq 0 ] || exit "$line"

$PY -m pytest tests -m own_stack --ignore=$CLIENT_FAULTS --durations=8
$PY -m pytest $CLIENT_FAULTS -m own_stack --durations=4
for v in $OTHER_LINES; do
  KAFKA_HEALTH_TEST_KAFKA_VERSION=$v $PY -m pytest tests -m kafka_versions --durations=5
done
