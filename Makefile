# The two commands of the README. Each does all set-up on a fresh machine first (scripts/setup.sh).
.PHONY: demo test setup

setup:
	@scripts/setup.sh

demo: setup
	.venv/bin/kafka-health demo

# The suite: lint, then session 1 with, beside it, the own-stack tests and the Kafka 3.9 and 4.1 subsets (one after
# the other), then the client-fault module. scripts/test.sh says what each step proves and why in this order.
test: setup
	scripts/test.sh
