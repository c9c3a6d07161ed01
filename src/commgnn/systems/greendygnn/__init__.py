"""The ``greendygnn`` system: its runtime in ``system``."""

from commgnn.core.description import SystemDescription

#: The window sizes a controller may pick, GreenDyGNN §IV-C1: W ∈ {1, 2, 4, …, 128}.
WINDOWS = (1, 2, 4, 8, 16, 32, 64, 128)

DESCRIPTION = SystemDescription(
    # made by its own steps (rules.smk): calibrate -> train_policy, validate_simulator
    products={"policy": "a window policy trained in the simulator calibrated on the run's "
                        "workload and network (`commgnn calibrate`, `commgnn train-policy`)"},
    figure_products={
        "control": "every control directory of the config (calibration, validation, policy)",
        "validation": "every simulator-validation directory (`control.validate`)",
    },
    name="greendygnn",
    colour="#44AA99",
    figure_labels="GreenDyGNN",
    options={
        "controller": {"enum": ["static", "heuristic", "dqn"], "default": "static",
                       "description": "who picks each window: static (fixed W, uniform), "
                                      "heuristic (the paper's threshold rule, Eq. 7) or dqn "
                                      "(a trained policy; the heuristic without one)"},
        "policy": {"type": ["string", "null"], "default": None,
                   "description": "dqn: a policy.pt file (default: the pipeline's "
                                  "train_policy output for this run's workload)"},
        "window": {"enum": list(WINDOWS), "default": 16,
                   "description": "W for static, the nominal W_0 for heuristic"},
        "cache_rows": {"type": "integer", "minimum": 0, "default": 100000,
                       "description": "K, rows per window cache"},
        "cost_weights": {"type": "boolean", "default": True,
                         "description": "per-owner cost weights and biased templates "
                                        "(false: the paper's 'w/o Cost Weights')"},
        "delay_threshold_ms": {"type": "number", "exclusiveMinimum": 0, "default": 4.0,
                               "description": "heuristic: inferred delay that halves W"},
        "warmup_epochs": {"type": "integer", "minimum": 1, "default": 2,
                          "description": "epochs that set the congestion baseline"},
        "recent_rtts": {"type": "integer", "minimum": 1, "default": 30,
                        "description": "round trips per owner in the estimator's median"},
        "prefetch_depth": {"type": "integer", "minimum": 1, "maximum": 1024, "default": 4,
                           "description": "resolver queue: batches assembled ahead"},
        "loader_depth": {"type": "integer", "minimum": 1, "maximum": 4096, "default": 8,
                         "description": "Stage 1 queue: batches sampled (online) or read "
                                        "(presample) ahead of the resolver"},
        "sampler": {"enum": ["online", "presample"], "default": "online",
                    "description": "Stage 1 (§V-A): online, the paper's: a background thread "
                                   "samples each batch with distributed sampling, its "
                                   "neighbour-list RPCs charged as sampling traffic; "
                                   "presample: RapidGNN's presampled blocks (needs the "
                                   "presample; sampling paid offline, reported apart)"},
    },
    needs=(),  # the presample only with `sampler: presample` (wants, check_inputs)
    figures={
        "greendygnn_fig2": ("runs",),
        "greendygnn_fig4": ("runs",),
        "greendygnn_fig5": ("runs",),
        "greendygnn_fig6": ("runs",),
        "greendygnn_fig9": ("run_dirs",),
        "greendygnn_table1": ("runs",),
        "greendygnn_fig7": ("run_dirs",),
        "greendygnn_fig8": ("validation",),
        "greendygnn_calibration": ("control",),
        "greendygnn_policy": ("control",),
        "greendygnn_table2": ("runs",),
    },
)
