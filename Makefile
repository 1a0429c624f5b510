# The two commands of the README. Each does all set-up on a fresh machine first (scripts/setup.sh).
.PHONY: demo test setup

setup:
	@scripts/setup.sh

demo: setup
	.venv/bin/kafka-health demo

# First lint and types (scripts/lint.sh: ruff check, mypy, a reason on every noqa), in seconds, before any stack.
# Then two sessions: the tests marked own_stack assert on what a Prometheus holds, so they get a stack of their own
# that no other test has fed. Of those, the client-fault module brings its own stack (its brokers listen on a network
# namespace's address); it runs after the others, alone: run beside them its slow reader missed its backlog alert in
# CI (2 cores shared by two stacks), alone it passed every run.
# Then the version matrix: the sessions above run the current release (the default, monitor/core/kafka_versions.py);
# each other supported version runs the version-sensitive subset (marker kafka_versions) on a fresh stack of its own.
CLIENT_FAULTS = tests/e2e/test_alert_client_faults.py
OTHER_KAFKA_VERSIONS = 3.9 4.1
test: setup
	scripts/lint.sh
	.venv/bin/python -m pytest tests -m "not own_stack" --durations=15
	.venv/bin/python -m pytest tests -m own_stack --ignore=$(CLIENT_FAULTS) --durations=8
	.venv/bin/python -m pytest $(CLIENT_FAULTS) -m own_stack --durations=4
	for v in $(OTHER_KAFKA_VERSIONS); do \
	  KAFKA_HEALTH_TEST_KAFKA_VERSION=$$v .venv/bin/python -m pytest tests -m kafka_versions --durations=5 || exit 1; \
	done
