"""The report's shared figure helpers (``plotting``) and the figure across systems
(``compare``). A paper's figures live in its system's package
(``systems/<paper>/figures/``); :mod:`commgnn.catalog` lists every figure."""
