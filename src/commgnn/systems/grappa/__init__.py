"""The ``grappa`` system: its runtime in ``system``."""

from commgnn.core.description import SystemDescription

#: The coverage-factor estimators (option ``estimator``; :mod:`commgnn.systems.grappa.system`).
ESTIMATORS = ("resampling", "harmonic", "uniform", "none")

DESCRIPTION = SystemDescription(
    name="grappa",
    colour="#CC6677",
    figure_labels="Grappa",
    options={
        "estimator": {"enum": list(ESTIMATORS), "default": "resampling",
                      "description": "coverage factor: resampling (Eq. 18 as printed), harmonic "
                                     "(|S| x Eq. 18), uniform (Eq. 12), none (Grappa-UW)"},
        "switching": {"enum": ["sweep", "fixed"], "default": "sweep",
                      "description": "sweep: repartition every super-epoch; fixed: the first "
                                     "partitions throughout (Grappa-FP)"},
        "super_epoch_epochs": {"type": "integer", "minimum": 0, "default": 0,
                               "description": "epochs per super-epoch; 0: ceil(epochs / "
                                              "schedule period)"},
        "chunk_halo_hops": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 8},
                                {"const": "depth"}], "default": "depth",
                      "description": "h-hop halo of the partition in its local graph: "
                                     "depth (the default, §3.2: the model's layers, k-hop "
                                     "closure), an integer h, 0 = strict isolation"},
        "remote_edge_fraction": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.0,
                                 "description": "cross-partition edges kept per super-epoch, "
                                                "their features fetched on demand "
                                                "(0.5: Grappa-50S)"},
        "active_workers": {"type": "integer", "minimum": 0, "default": 0,
                           "description": "phase-parallel: at most this many workers train "
                                          "at once (0: all)"},
        "mode": {"enum": ["sampling", "fullgraph"], "default": "sampling",
                 "description": "mini-batch sampling or one full-batch step per epoch on "
                                "the partition"},
        "deficit_threshold": {"type": ["number", "null"], "minimum": 0, "maximum": 1,
                              "default": None,
                              "description": "switch early when 1 - c_uniform exceeds this "
                                             "for deficit_patience steps (null: off)"},
        "deficit_patience": {"type": "integer", "minimum": 1, "default": 20,
                             "description": "consecutive steps of deficit before an early "
                                            "switch"},
    },
    # the partitioning key `halo_hops` (the halo sets a partition records) is another setting
    renamed={"halo_hops": "chunk_halo_hops"},
    partition_methods=("chunk",),
    figures={
        "grappa_table1": ("partitions",),
        "grappa_table3": ("runs",),
        "grappa_table4": ("runs",),
        "grappa_table7": ("runs",),
        "grappa_table8": ("runs", "partition_stats"),
        "grappa_fig4": ("runs",),
    },
)
