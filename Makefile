# The two commands of the README. Each does all set-up on a fresh machine first (scripts/setup.sh).
.PHONY: demo test setup

setup:
	@scripts/setup.sh

demo: setup
	.venv/bin/kafka-health demo

# Two sessions: the tests marked own_stack assert on what a Prometheus holds, so they get a stack of their own
# that no other test has fed.
test: setup
	.venv/bin/python -m pytest tests -m "not own_stack" --durations=15
	.venv/bin/python -m pytest tests -m own_stack --durations=8
