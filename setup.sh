#!/usr/bin/env bash
# Create .venv at the repository root (if missing) and install commgnn with its
# dependencies. Idempotent: reinstalls only when pyproject.toml changed.
#   bash setup.sh          the main environment (.venv)
#   bash setup.sh --dgl    also the DGL environment (.venv-dgl) for the `distdgl` system:
#                          DGL 2.1.0 with torch 2.2.1 and numpy < 2 (about 5 GB, a few
#                          minutes), reinstalled only when envs/dgl-requirements.txt changed
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
if [ "${1:-}" = "--dgl" ]; then
  if [ ! -x .venv-dgl/bin/python ]; then
    "$PY" -m venv .venv-dgl
  fi
  dgl_stamp=.venv-dgl/.commgnn-installed
  dgl_want=$(sha256sum envs/dgl-requirements.txt | cut -d' ' -f1)
  if [ ! -f "$dgl_stamp" ] || [ "$(cat "$dgl_stamp")" != "$dgl_want" ]; then
    # torch 2.2.1 from the package index is the CUDA build (with its nvidia-* wheels)
    .venv-dgl/bin/python -m pip install --quiet -r envs/dgl-requirements.txt
    .venv-dgl/bin/python -m pip install --quiet --no-deps "dgl==2.1.0" "torchdata==0.7.1"
    .venv-dgl/bin/python -c "import dgl.distributed, numpy; assert numpy.__version__ < '2'"
    echo "$dgl_want" > "$dgl_stamp"
  fi
fi
