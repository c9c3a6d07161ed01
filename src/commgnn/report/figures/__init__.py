"""One module per figure; each has ``make(inputs, out_png) -> pandas.DataFrame`` that
writes the figure (PNG, and PDF beside it: ``plotting.save_figure``) and returns the
plotted data (written next to it as CSV by ``commgnn figure``)."""

FIGURES = ("rapidgnn_fig3", "rapidgnn_table2", "rapidgnn_fig4", "rapidgnn_fig5",
           "rapidgnn_fig6", "rapidgnn_fig7", "rapidgnn_table3", "rapidgnn_fig8",
           "rapidgnn_fig9", "grappa_table1", "grappa_table3", "grappa_table4",
           "grappa_table5",
           "grappa_table7", "grappa_table8", "grappa_fig4", "hopgnn_table1", "hopgnn_fig11",
           "hopgnn_fig13", "hopgnn_fig14", "hopgnn_fig16", "hopgnn_table3", "greendygnn_fig2",
           "greendygnn_fig4", "greendygnn_fig5", "greendygnn_fig9", "greendygnn_table1",
           "greendygnn_fig7", "greendygnn_fig8", "greendygnn_policy", "greendygnn_table2",
           "greendygnn_calibration", "compare", "claims", "figure_index")
