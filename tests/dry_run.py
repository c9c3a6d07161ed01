"""A config's Snakemake DAG without running it: jobs per rule."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def job_counts(repo: Path, workdir: Path, config: Path, timeout: int = 600) -> dict[str, int]:
    """``snakemake --dry-run --quiet rules`` of ``config`` in ``workdir``: {rule: jobs}
    (an AssertionError with Snakemake's stderr when the DAG does not build)."""
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--snakefile",
         str(repo / "Snakefile"), "--directory", str(workdir), "--configfile", str(config),
         "--dry-run", "--quiet", "rules"],
        capture_output=True, text=True, check=False, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {fields[0]: int(fields[1]) for fields in map(str.split, proc.stdout.splitlines())
            if len(fields) == 2 and fields[1].isdigit()}
