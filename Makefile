# The two commands of the README. Each does all set-up on a fresh machine first (scripts/setup.sh).
.PHONY: demo test setup

setup:
	@scripts/setup.sh

demo: setup
	.venv/bin/kafka-health demo

test: setup
	.venv/bin/python -m pytest tests
