# The distdgl rules' functions, and the pipeline products they add (included by
# rules.smk beside this file).
from snakemake.exceptions import WorkflowError
from commgnn.systems.distdgl import SCRIPTS as DGL_SCRIPTS
from commgnn.systems.distdgl.system import DGL_PYTHON_ENV, DGL_SETUP, dgl_python


PIPELINE_INPUT_PATHS["dgl_partition"] = (
    lambda s: f"{RESULTS}/dgl_partitions/{s.dataset}/{s.partitioning}")


def dgl_interpreter(wildcards):
    """$COMMGNN_DGL_PYTHON, else .venv-dgl (shell-quoted)."""
    found = dgl_python()
    if found is None:
        raise WorkflowError(f"the DGL environment is missing: run `{DGL_SETUP}` "
                            f"(or set {DGL_PYTHON_ENV})")
    return shlex.quote(str(found))


# (what the runs want, not system_inputs: other fragments' products may not be added yet)
if workflow.is_main_process and dgl_python() is None and any(
        "dgl_partition" in get_system(s.base_system).wants(s.system_options)
        for s in RUNS.values()):
    _config_failure(HostError(f"runs of this config need the DGL environment: run "
                              f"`{DGL_SETUP}` (or set {DGL_PYTHON_ENV})"))
