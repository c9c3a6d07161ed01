"""Per epoch of each run of run.sh: target epoch time, raw seconds outside the steps
(slowest worker), target energy, sampling and fetch bytes (all workers)."""

import json
import sys
from pathlib import Path


def main(root: Path, names: list[str]) -> None:
    print("| run | epoch | epoch s (target) | outside steps (s raw) | J | sampling B | fetch B |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        run = root / f"run_{name}"
        rows = [json.loads(x) for x in (run / "epochs.jsonl").read_text().splitlines()]
        for r in rows:
            f = r["workers"][0]["time_dilation"]
            slowest = max(w["time_s"] for w in r["workers"])
            outside = slowest - max(w["step_s"] for w in r["workers"])
            print(f"| {name} | {r['epoch']} | {slowest / f:.3f} | {outside:.1f} | "
                  f"{r['energy_target_j']:.1f} | "
                  f"{sum(w['network_sampling_bytes'] for w in r['workers'])} | "
                  f"{sum(w['remote_bytes'] for w in r['workers'])} |")
        s = json.loads((run / "summary.json").read_text())
        times = s["epoch_times_raw_s"]
        print(f"| {name} | all | {sum(times) / len(times) / s['time_dilation']:.3f} | | "
              f"{s['energy_target_per_epoch_j']:.1f} / epoch | | |")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
