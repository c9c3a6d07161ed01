"""RapidGNN's figures and tables, one module each (the contract: :mod:`commgnn.catalog`)."""

#: module -> (paper, the paper's figure or table, what it shows), in the index's order.
INDEX: dict[str, tuple[str, str, str]] = {
    "rapidgnn_fig3": ("RapidGNN", "Fig. 3", "frequency of remote feature accesses per node"),
    "rapidgnn_table2": ("RapidGNN", "Table 2",
                        "step and network speedup vs DGL-METIS, DGL-Random, GCN"),
    "rapidgnn_fig4": ("RapidGNN", "Fig. 4", "remote feature MB per step vs DGL-METIS"),
    "rapidgnn_fig5": ("RapidGNN", "Fig. 5", "remote fetches per epoch vs cache size"),
    "rapidgnn_fig6": ("RapidGNN", "Fig. 6", "epoch-time speedup at 3 and 4 machines"),
    "rapidgnn_fig7": ("RapidGNN", "Fig. 7", "GPU and CPU memory per worker"),
    "rapidgnn_table3": ("RapidGNN", "Table 3", "CPU and GPU energy, power, duration"),
    "rapidgnn_fig8": ("RapidGNN", "Fig. 8", "energy per epoch and mean power"),
    "rapidgnn_fig9": ("RapidGNN", "Fig. 9", "training accuracy per epoch"),
}
