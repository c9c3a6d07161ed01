"""Communication strategies, one package each (``systems/<name>/``: the runtime in
``system.py``, and a paper's own pipeline steps, figures and claims beside it); see
:mod:`commgnn.train.system` for the contract and :mod:`commgnn.systems.registry` for
discovery. Importing this package imports nothing else."""
