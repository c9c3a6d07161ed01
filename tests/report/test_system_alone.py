"""The report stage of each built-in system alone, on real run records of the tiny dataset.

A user's first config often runs one system. For each system of the shared tiny pipeline
(``tiny_pipeline`` fixture: one training run per system and variant), the report stage a
config running it alone would schedule (:mod:`commgnn.catalog`) runs here through
``commgnn figure`` on that system's run records only: every figure it declares, the
comparison, the claims ledger and the figure index end without an error, and a figure
whose runs lack what it needs is written as not applicable, with the reason, which the
ledger and the index carry. distdgl (its own environment) runs alone through Snakemake.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from tiny_pipeline import TINY

from commgnn.catalog import claims_reads, declared_figures, system_declarations
from commgnn.cli import main
from commgnn.experiments import expand_experiments
from commgnn.ledger import CLAIMS
from commgnn.report.claims import VERDICTS
from commgnn.report.figure_tables import (
    NOT_APPLICABLE,
    not_applicable_reason,
    read_figure_table,
)
from commgnn.systems.distdgl.system import dgl_python
from commgnn.systems.registry import get_system

PAPERS = {"rapidgnn": "RapidGNN", "grappa": "Grappa", "hopgnn": "HopGNN",
          "greendygnn": "GreenDyGNN"}
ALONE = sorted({spec.base_system for spec in expand_experiments(TINY)})
#: Figures that cannot apply to the system alone in the tiny pipeline, and why.
EXPECTED_NOT_APPLICABLE = {
    "rapidgnn": {"rapidgnn_table2": "beside a baseline"},  # no DGL-METIS run beside it
    "grappa": {"grappa_table1": "no metis or random"},  # its runs are on chunks only
}


def _inputs(out: Path, system: str, runs_csv: Path, stats_csv: Path) -> dict[str, list[str]]:
    """Paths of each input kind (``core.declarations.FIGURE_INPUTS`` and a system's
    ``figure_products``) a config running the
    system's runs of the tiny pipeline alone would make."""
    specs = [s for s in expand_experiments(TINY) if s.base_system == system]
    presamples = sorted({f"{out}/presample/{s.dataset}/{s.partitioning}/b{s.batch_size}_"
                         f"s{s.seed}" for s in specs
                         if "presample" in get_system(system).wants(s.system_options)})
    control = sorted(str(p) for p in (out / "control").glob("*/*/*/*")) if any(
        "policy" in get_system(system).wants(s.system_options) for s in specs) else []
    return {"runs": [str(runs_csv)], "partition_stats": [str(stats_csv)],
            "partitions": sorted({f"{out}/partitions/{s.dataset}/{s.partitioning}"
                                  for s in specs}),
            "run_dirs": [f"{out}/runs/{s.run_id}" for s in specs],
            "control": control,
            "validation": [p for p in control if Path(p).name == "validation"],
            "presamples": presamples, "datasets": [f"{out}/datasets/tiny"]}


def _figure(name: str, out_png: Path, inputs: list[str]) -> pd.DataFrame:
    code = main(["figure", name, "--systems", json.dumps(system_declarations()), "--out",
                 str(out_png), *inputs])
    assert code == 0, f"commgnn figure {name} exited {code}"
    assert out_png.stat().st_size > 0 and out_png.with_suffix(".pdf").is_file()
    return read_figure_table(out_png.with_suffix(".csv"))


@pytest.mark.timeout(900)
@pytest.mark.parametrize("system", ALONE)
def test_report_stage_of_one_system_alone(system, tiny_pipeline, tmp_path):
    out = tiny_pipeline / "out"
    specs = [s for s in expand_experiments(TINY) if s.base_system == system]
    runs_csv = tmp_path / "tables" / "runs.csv"
    stats_csv = tmp_path / "tables" / "partition_stats.csv"
    runs_csv.parent.mkdir()
    assert main(["runs-table", "--out", str(runs_csv),
                 *[f"{out}/runs/{s.run_id}" for s in specs]]) == 0
    partitions = sorted({f"{out}/partitions/tiny/{s.partitioning}" for s in specs})
    assert main(["partition-table", "--out", str(stats_csv), *partitions]) == 0
    built = _inputs(out, system, runs_csv, stats_csv)
    figures = declared_figures([system], built)
    assert set(figures) <= set(get_system(system).figures)
    tables = {}
    for name, kinds in figures.items():
        tables[name] = _figure(name, tmp_path / f"{name}.png",
                               [path for kind in kinds for path in built[kind]])
    tables["compare"] = _figure("compare", tmp_path / "compare.png", [str(runs_csv)])
    assert set(tables["compare"]["base_system"]) == {system}
    claims = _figure("claims", tmp_path / "claims.png",
                     [str(runs_csv), *[str(tmp_path / f"{name}.csv")
                                       for name in claims_reads(figures)]])
    index = _figure("figure_index", tmp_path / "figure_index.png",
                    [str(tmp_path / f"{name}.csv") for name in [*figures, "compare", "claims"]])

    not_applicable = {name: not_applicable_reason(t) for name, t in tables.items()
                      if not_applicable_reason(t) is not None}
    expected = EXPECTED_NOT_APPLICABLE.get(system, {})
    assert set(not_applicable) == set(expected), not_applicable
    for name, words in expected.items():
        assert words in not_applicable[name]
        assert list(tables[name].columns) == [NOT_APPLICABLE]
    # the ledger: every claim has a verdict; those of a figure that does not apply say why,
    # and no claim of a paper whose system did not run is measured
    assert len(claims) == len(CLAIMS) and claims["verdict"].isin(VERDICTS).all()
    figure_of = {claim.id: claim.figure for claim in CLAIMS}
    for _, row in claims.iterrows():
        figure = figure_of[row["id"]]
        if figure in not_applicable:
            assert row["verdict"] == "not applicable"
            assert not_applicable[figure] in row["reason"]
        elif row["paper"] != PAPERS.get(system) and figure != "compare":
            assert row["verdict"] == "not measured", row.to_dict()
    # the index: every figure built, with its status
    status = index.set_index("module")["status"]
    assert set(status.index) == {*figures, "compare", "claims"}
    for name in figures:
        assert status[name] == ("built" if name not in not_applicable
                                else f"not applicable: {not_applicable[name]}")


def test_distdgl_alone_runs_to_the_end(repo_root, tmp_path):
    """distdgl (DGL's own training in its own environment) alone, through Snakemake:
    the comparison, the ledger and the index of its one run."""
    if dgl_python() is None:
        pytest.skip("the DGL environment is missing (bash setup.sh --dgl)")
    config = {**{k: TINY[k] for k in ("results_dir", "datasets", "training")},
              "partitionings": {"metis2": TINY["partitionings"]["metis2"]},
              "experiments": [{"systems": ["distdgl"], "datasets": ["tiny"],
                               "partitionings": ["metis2"], "batch_sizes": [256],
                               "networks": ["none"]}]}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--snakefile",
         str(repo_root / "Snakefile"), "--directory", str(tmp_path), "--configfile",
         str(tmp_path / "config.yaml")],
        capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    figures = tmp_path / "out" / "figures"
    assert set(pd.read_csv(figures / "compare.csv")["base_system"]) == {"distdgl"}
    claims = pd.read_csv(figures / "claims.csv")
    assert (claims["verdict"] == "not measured").all()
    index = pd.read_csv(figures / "figure_index.csv")
    assert set(index["module"]) == {"compare", "claims"}
    assert (index["status"] == "built").all()
