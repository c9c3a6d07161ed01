"""Grappa's figures and tables, one module each (the contract: :mod:`commgnn.catalog`)."""

#: module -> (paper, the paper's figure or table, what it shows), in the index's order.
INDEX: dict[str, tuple[str, str, str]] = {
    "grappa_table1": ("Grappa", "Table 1", "neighbour traffic of an epoch, by partitions"),
    "grappa_table3": ("Grappa", "Table 3", "epoch time and accuracy by system and depth"),
    "grappa_table4": ("Grappa", "Table 4", "mean test accuracy by depth"),
    "grappa_table5": ("Grappa", "Table 5", "Cluster-GCN vs Grappa, GCN-2"),
    "grappa_table7": ("Grappa", "Table 7 (and Table 10)", "ablations' test accuracy"),
    "grappa_table8": ("Grappa", "Table 8", "partitioning and switching overheads"),
    "grappa_fig4": ("Grappa", "Fig. 4", "epoch time vs partitions"),
}
