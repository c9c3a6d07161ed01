"""HopGNN's figures and tables, one module each (the contract: :mod:`commgnn.catalog`)."""

#: module -> (paper, the paper's figure or table, what it shows), in the index's order.
INDEX: dict[str, tuple[str, str, str]] = {
    "hopgnn_table1": ("HopGNN", "Table 1", "micrograph vs subgraph locality"),
    "hopgnn_fig11": ("HopGNN", "Figs. 11, 12", "epoch time of DGL, P3, Naive, HopGNN"),
    "hopgnn_fig13": ("HopGNN", "Fig. 13", "technique ladder +MG, +PG, All"),
    "hopgnn_fig14": ("HopGNN", "Fig. 14", "miss rates, DGL vs micrographs"),
    "hopgnn_fig16": ("HopGNN", "Fig. 16", "requests and rows removed by pre-gathering"),
    "hopgnn_table3": ("HopGNN", "Table 3", "accuracy of DGL, LO and HopGNN"),
}
