"""One module per figure; each has ``make(inputs, out_png) -> pandas.DataFrame`` that
writes the figure and returns the plotted data (also written next to it as CSV)."""

FIGURES = ("rapidgnn_fig3", "rapidgnn_fig5")
