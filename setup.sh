#!/usr/bin/env bash
# Create .venv at the repository root (if missing) and install commgnn with its
# dependencies. Idempotent: reinstalls only when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.commgnn-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  # The exact CPU build (installs in seconds here); pyproject declares a range for users.
  .venv/bin/python -m pip install --quiet "torch==2.13.0"
  .venv/bin/python -m pip install --quiet -e ".[dev,slurm]"
  echo "$want" > "$stamp"
fi
