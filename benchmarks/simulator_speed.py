"""Seconds per simulated episode (GreenDyGNN §IV-B: "under 10 ms on one CPU core"; the
issue's target: under 1 ms) on a real calibration, one thread.

Two costs are measured separately:

- ``episode``: a whole 30-epoch run for a given decision sequence — the per-(epoch,
  action) tables for the profile plus the walk over the windows — at several constant
  windows, on random congestion profiles;
- ``env_step``: one environment transition of the DQN's training loop (the state vector
  and reward of one window), averaged over a random-action episode.

Usage: python benchmarks/simulator_speed.py CALIBRATION_JSON OUT_JSON
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from commgnn.systems.greendygnn.controller import WINDOWS
from commgnn.systems.greendygnn.costmodel import CostModel, read_calibration
from commgnn.systems.greendygnn.simulator import SimEnv, Simulator, random_profile

EPOCHS = 30
REPEATS = 200


def main(calibration_path: Path, out: Path) -> None:
    torch.set_num_threads(1)
    model = CostModel(read_calibration(calibration_path))
    sim = Simulator(model, EPOCHS)
    rng = np.random.default_rng(0)
    profiles = [random_profile(rng, EPOCHS, model.world)[0] for _ in range(REPEATS)]
    episode = {}
    for w in (1, 16, 128):
        action = model.action(WINDOWS.index(w), 0)
        sim.episode(profiles[0], [action])  # warm
        t0 = time.perf_counter()
        for p in profiles:
            sim.episode(p, [action])
        episode[w] = (time.perf_counter() - t0) / REPEATS
    env = SimEnv(model, EPOCHS)
    steps, t0 = 0, time.perf_counter()
    for _ in range(20):
        env.reset(rng)
        done = False
        while not done:
            _, _, done = env.step(int(rng.integers(env.n_actions)))
            steps += 1
    env_step = (time.perf_counter() - t0) / steps
    result = {"calibration": str(calibration_path), "epochs": EPOCHS,
              "steps_per_epoch": model.steps, "workers": model.world,
              "episode_s_by_window": episode, "env_step_s": env_step,
              "env_steps_measured": steps}
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
