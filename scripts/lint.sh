#!/usr/bin/env bash
# Lint and types, run by `make test` before the suite (so by CI): `ruff check` and mypy as pyproject.toml configures
# them, then every `# noqa` and `# type: ignore` must say why after its codes (`# noqa: E402 - after sys.path is set`).
# The format check too: `ruff format` (pyproject's [tool.ruff.format]) is the one layout; run it before committing.
set -euo pipefail
cd "$(dirname "$0")/.."

.venv/bin/ruff check --quiet .
.venv/bin/ruff format --check --quiet .
.venv/bin/mypy --no-error-summary

# A suppression with nothing after its codes: say what makes the line right as it is.
bare=$(grep -rnE --include='*.py' \
  '#[[:space:]]*(noqa(:[[:space:]]*[A-Z]+[0-9]+([[:space:]]*,[[:space:]]*[A-Z]+[0-9]+)*)?|type:[[:space:]]*ignore(\[[^]]*\])?)[[:space:]]*$' \
  alerts collectors dashboards monitor tests bench scripts deploy || true)
if [ -n "$bare" ]; then
  printf '%s\n' "$bare" >&2
  echo "lint: a # noqa or # type: ignore without its reason (write it after the codes)" >&2
  exit 1
fi
