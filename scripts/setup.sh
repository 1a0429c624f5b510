#!/usr/bin/env bash
# One-shot set-up on a fresh Debian machine: system packages, the virtualenv, Python packages, Kafka jars.
# Idempotent and quiet when everything is already there. Used by `make demo` and `make test` (and so by CI).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
need=()
# Debian splits ensurepip out of the interpreter: without python3-venv, `python3 -m venv` fails. Only needed to
# create the virtualenv, so not asked for once it exists.
[ -x .venv/bin/python ] || "$PY" -c 'import ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
command -v java >/dev/null || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || need+=(maven)
command -v prometheus >/dev/null || need+=(prometheus)
command -v prometheus-alertmanager >/dev/null || command -v alertmanager >/dev/null || need+=(prometheus-alertmanager)
command -v promtool >/dev/null || need+=(prometheus)
command -v amtool >/dev/null || need+=(prometheus-alertmanager)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v tc >/dev/null || need+=(iproute2)
# kcat (librdkafka's own CLI): one of the real clients of the advisor's stack tests
command -v kcat >/dev/null || need+=(kcat)
command -v systemd-analyze >/dev/null || need+=(systemd)
# node_exporter: the host source recorded by tests/fixtures/exposition/record.py and timed by bench/sources.py
command -v prometheus-node-exporter >/dev/null || need+=(prometheus-node-exporter)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: need Debian packages: ${need[*]} (run as root, or install them)" >&2; exit 1
  fi
  echo "setup: installing Debian packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # Debian starts services on install; the stack starts its own on its own ports.
  for svc in prometheus prometheus-alertmanager prometheus-node-exporter postgresql; do
    (systemctl stop "$svc" || service "$svc" stop) >/dev/null 2>&1 || true
  done
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.kh-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing Python packages (first run takes a few minutes)"
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q -e '.[dev]'
  touch "$stamp"
fi

# kafkajs (npm registry) and a franz-go producer (Go module proxy): real clients of the advisor's stack tests, built
# once into ~/.cache/kafka-health/clients (tests/harness/polyglot.py; its fixtures would otherwise do it themselves)
if command -v npm >/dev/null && { command -v go >/dev/null || [ -x /usr/local/go/bin/go ]; }; then
  .venv/bin/python -m tests.harness.polyglot ensure >/dev/null
fi
