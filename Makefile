# The two commands of the README. Each does all set-up on a fresh machine first (scripts/setup.sh).
.PHONY: demo test setup

setup:
	@scripts/setup.sh

demo: setup
	.venv/bin/kafka-health demo

# The suite: lint, then session 1 (with the Kafka 3.9 and 4.1 subsets beside it, one after the other), then the
# own-stack sessions. scripts/test.sh says what each step proves and why they run in this order.
test: setup
	scripts/test.sh
