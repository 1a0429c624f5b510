# The two commands of the README. Each does all set-up on a fresh machine first (scripts/setup.sh).
.PHONY: demo test setup

setup:
	@scripts/setup.sh

demo: setup
	.venv/bin/kafka-health demo

# Two sessions: the tests marked own_stack assert on what a Prometheus holds, so they get a stack of their own
# that no other test has fed. Of those, the client-fault module brings its own stack (its brokers listen on a network
# namespace's address) and its faults never meet the others': it runs beside them, its report printed after theirs.
CLIENT_FAULTS = tests/e2e/test_alert_client_faults.py
test: setup
	.venv/bin/python -m pytest tests -m "not own_stack" --durations=15
	log=$$(mktemp); \
	.venv/bin/python -m pytest $(CLIENT_FAULTS) -m own_stack --durations=4 >$$log 2>&1 & pid=$$!; \
	.venv/bin/python -m pytest tests -m own_stack --ignore=$(CLIENT_FAULTS) --durations=8; rest=$$?; \
	wait $$pid; faults=$$?; cat $$log; rm -f $$log; exit $$(( rest || faults ))
