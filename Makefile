# The two commands of the README. Each does all set-up on a fresh machine first (scripts/setup.sh).
.PHONY: demo test setup

setup:
	@scripts/setup.sh

demo: setup
	.venv/bin/kafka-health demo

# Two sessions: the tests marked own_stack assert on what a Prometheus holds, so they get a stack of their own
# that no other test has fed. Of those, the client-fault module brings its own stack (its brokers listen on a network
# namespace's address) and runs beside the others (its log is printed after them): since its slow reader is found
# by its own socket backlog, not only by the broker-wide p99, it passed beside the disk faults' stack (2026-11-24).
CLIENT_FAULTS = tests/e2e/test_alert_client_faults.py
test: setup
	.venv/bin/python -m pytest tests -m "not own_stack" --durations=15
	@.venv/bin/python -m pytest $(CLIENT_FAULTS) -m own_stack --durations=4 -p no:cacheprovider \
	    > .client-faults.log 2>&1 & faults=$$!; \
	.venv/bin/python -m pytest tests -m own_stack --ignore=$(CLIENT_FAULTS) --durations=8; own=$$?; \
	wait $$faults; rc=$$?; cat .client-faults.log; exit $$(( own || rc ))
