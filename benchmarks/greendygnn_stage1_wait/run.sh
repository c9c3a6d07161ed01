#!/bin/bash
# GreenDyGNN's Stage 1 epoch-end wait, side by side: static W = 16 on the reddit-like
# campaign's inputs and clock (f 79.2), 8 epochs (0-2 clean, 3-6 congested, 7 clean), seed 0,
# before the fix (commit d117531, checked out as a worktree) and after (this checkout).
# Needs the campaign's setup (benchmarks/configs/greendygnn_eval_reddit.yaml: --until presample
# dilation, then run_archive.py clock). Usage: benchmarks/greendygnn_stage1_wait/run.sh old new
set -e
cd "$(git rev-parse --show-toplevel)"
R=results/bench-greendygnn-reddit
W=/tmp/stage1_wait
mkdir -p $W
[ -d $W/code_old ] || git worktree add -q $W/code_old d117531
SPEC='{"batch_size": 1000, "dataset": "reddit-like-4", "model": "sage", "network": "congested", "network_spec": {"congestion": {"kind": "scenario", "name": "greendygnn", "seed": 0}, "preset": "25gbe", "time_dilation": "auto"}, "partitioning": "metis4", "seed": 0, "system": "greendygnn", "system_options": {"cache_rows": 25000, "controller": "static", "cost_weights": true, "delay_threshold_ms": 4.0, "loader_depth": 8, "policy": null, "prefetch_depth": 4, "recent_rtts": 6, "sampler": "online", "system": "greendygnn", "warmup_epochs": 2, "window": 16}, "training": {"checkpoint": false, "collective_timeout_s": 1200, "device": "auto", "dropout": 0.5, "epochs": 8, "eval_every": 0, "eval_fanouts": null, "eval_max_nodes": 1000, "fanouts": [10, 25], "heads": 4, "hidden": 16, "interface": null, "lr": 0.003, "master_addr": "127.0.0.1", "master_port": 0, "resume": false, "rpc_timeout_s": 600, "stop_at_plateau": null, "transport": "auto", "weight_decay": 0}, "workers": 4}'
for which in "$@"; do
  if [ "$which" = old ]; then export PYTHONPATH=$W/code_old/src; else unset PYTHONPATH; fi
  rm -rf $W/run_$which $W/run_$which-ckpt
  .venv/bin/python -m commgnn train --spec "$SPEC" --dataset $R/datasets/reddit-like-4 \
    --partition $R/partitions/reddit-like-4/metis4 --out $W/run_$which --checkpoints $W/run_$which-ckpt \
    --dilation $R/dilation/reddit-like-4/830b3d182aa2d12f-w4.json > $W/$which.log 2>&1
done
.venv/bin/python benchmarks/greendygnn_stage1_wait/report.py $W "$@"
