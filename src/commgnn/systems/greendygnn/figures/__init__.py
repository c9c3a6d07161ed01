"""GreenDyGNN's figures and tables, one module each (the contract: :mod:`commgnn.catalog`)."""

#: module -> (paper, the paper's figure or table, what it shows), in the index's order.
INDEX: dict[str, tuple[str, str, str]] = {
    "greendygnn_fig2": ("GreenDyGNN", "§II-C (Fig. 2 analogue)",
                        "energy vs rebuild window, clean and congested"),
    "greendygnn_fig4": ("GreenDyGNN", "Fig. 4", "energy under congestion by method"),
    "greendygnn_fig5": ("GreenDyGNN", "Fig. 5", "congestion overhead vs each clean run"),
    "greendygnn_fig6": ("GreenDyGNN", "Fig. 6", "energy without congestion by method"),
    "greendygnn_fig7": ("GreenDyGNN", "Fig. 7", "rebuild window and hit rate per epoch"),
    "greendygnn_fig8": ("GreenDyGNN", "Fig. 8", "simulator validation error"),
    "greendygnn_fig9": ("GreenDyGNN", "Fig. 9", "cumulative energy under congestion"),
    "greendygnn_table1": ("GreenDyGNN", "Table I", "energy and epoch time under congestion"),
    "greendygnn_table2": ("GreenDyGNN", "Table II, Fig. 11",
                          "ablation: without RL, without cost weights"),
    "greendygnn_policy": ("GreenDyGNN", "§IV-C2", "DQN learning curve, simulated energy"),
    "greendygnn_calibration": ("GreenDyGNN", "Algorithm 1, §IV-B", "calibration fits"),
}
