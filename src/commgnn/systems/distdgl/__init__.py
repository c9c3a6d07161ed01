"""DistDGL's side of the ``distdgl`` baseline: scripts run by the DGL environment's
interpreter (``.venv-dgl``, ``envs/dgl.yaml``), never imported by the main environment.

* ``convert.py``: commgnn's dataset and partition → DGL's partition format, written by
  DGL's own ``partition_graph`` given commgnn's node assignment (both systems see the same
  partitions).
* ``machine.py``: one DistDGL machine on this host: its graph server and its trainer, in
  a mount namespace of their own (private ``/dev/shm``: servers of different machines
  would otherwise share shared-memory names).
* ``trainer.py``: DGL's distributed GraphSAGE training (DistGraph, DistNodeDataLoader with
  DGL's NeighborSampler, DistTensor features, DDP), writing commgnn's step and epoch
  records.

The main environment's side is :mod:`commgnn.systems.distdgl.system`; the DGL
environment runs the scripts as files and never imports this package.
"""

from pathlib import Path

from commgnn.core.description import SystemDescription

#: Where the scripts are (run as files by the DGL interpreter).
SCRIPTS = Path(__file__).parent

DESCRIPTION = SystemDescription(
    # made by its own step (rules.smk: dgl_partition, in the DGL environment)
    products={"dgl_partition": "the run's partition in DGL's format, converted by DGL's own "
                               "partition_graph given the same node assignment"},
    name="distdgl",
    colour="#AA4499",
    figure_labels="DistDGL",
    options={
        "shm_mb": {"type": "integer", "minimum": 64, "default": 4096,
                   "description": "size limit of each machine's private /dev/shm (MB)"},
    },
    needs=("dgl_partition",),
    uses_network=False,  # DGL's own sockets: commgnn's link model does not apply
    external=True,
)
