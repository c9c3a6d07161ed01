"""A hand-made calibration for the simulator and policy tests."""

from __future__ import annotations

from commgnn.energy.target import TargetPowerModel
from commgnn.systems.greendygnn.controller import WINDOWS
from commgnn.systems.greendygnn.costmodel import CALIBRATION_VERSION

ROW_BYTES = 512


def toy_calibration(*, hits: float = 50.0, fill: float = 10.0, clean_step: float = 0.01,
                    compute: float = 0.005, rebuild: float = 0.0, slack: float = 0.0,
                    kappa: float = 1.0, gamma: float = 0.0, steps: int = 10) -> dict:
    """Two workers, 100 remote rows per batch from the other, the same hits and fills for
    every window and template."""
    P = 2
    remote = [[0.0, 100.0], [100.0, 0.0]]
    hit = [[[[0.0 if o == r else hits for o in range(P)] for _ in range(P)]
            for _ in WINDOWS] for r in range(P)]
    fills = [[[[0.0 if o == r else fill for o in range(P)] for _ in range(P)]
              for _ in WINDOWS] for r in range(P)]
    return {
        "version": CALIBRATION_VERSION,
        "workload": {"steps_per_epoch": steps, "row_bytes": ROW_BYTES, "workers": P},
        "rpc": {"fit": {"alpha_s": 0.001, "beta_s_per_byte": 1e-9,
                        "gamma_s_per_byte_ms": gamma, "delay_coef": kappa}},
        "tables": {"workers": P, "windows": list(WINDOWS), "remote_per_batch": remote,
                   "hits_per_batch": hit, "fill_rows_per_window": fills,
                   "select_s": [0.0] * len(WINDOWS)},
        "runs": {"windows": [1, 128], "step_s": [clean_step] * 2, "compute_s": [compute] * 2,
                 "slack_s": [[slack] * P] * 2, "rebuild_s": [rebuild] * 2,
                 "base_rtt_s": [[[0.0, 0.002], [0.002, 0.0]]] * 2},
        "fits": {"row_cost_s": 0.0},
        "power": TargetPowerModel().describe(),
    }
