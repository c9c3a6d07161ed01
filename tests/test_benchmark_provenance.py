"""Every committed result says what made it (benchmarks/results/PROVENANCE.json), and the
ledger over the committed benchmarks judges each testbed apart, files what a benchmark did
not run as "not applicable", and lets any other failure of a figure fail it."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from commgnn.core.testbed import apart_from_energy

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
claims_ledger = importlib.import_module("claims_ledger")
provenance = importlib.import_module("provenance")


def test_every_committed_result_has_its_provenance():
    manifest = provenance.load()
    missing = sorted(set(provenance.result_files()) - set(manifest))
    assert not missing, f"run `python benchmarks/provenance.py` to record {missing}"
    assert all(entry["commit"] and entry["testbed"] for entry in manifest.values())


def test_the_committed_ledger_never_pools_testbeds():
    """A ledger row's runs may differ in their energy model only (it prices energy alone),
    and then the row is no energy claim's verdict."""
    data = pd.read_csv(REPO / "benchmarks" / "results" / "claims_ledger.csv")
    assert data["provenance"].notna().all()
    assert (data["provenance"].map(apart_from_energy).str.contains(r" \| ") == False).all()  # noqa: E712
    assert not data["reason"].str.contains("testbeds pooled", na=False).any()


def _runs(testbed: str | None) -> pd.DataFrame:
    rows = pd.read_csv(REPO / "benchmarks" / "results" / "hopgnn_arxiv_runs.csv")
    return rows if testbed is None else rows.assign(testbed=testbed)


def test_every_row_of_the_committed_ledger_keeps_its_nine_columns():
    """A benchmark pooling testbeds of two energy models names both, joined by " | ": the
    Markdown ledger escapes it, so no row gains a column."""
    assert claims_ledger.markdown_cell("a | b") == "a \\| b"
    text = (REPO / "benchmarks" / "results" / "claims_ledger.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert rows
    for row in rows:
        cells = re.split(r"(?<!\\)\|", row)[1:-1]
        assert len(cells) == 9, row


def test_a_benchmark_is_judged_per_testbed_and_says_what_it_did_not_run(tmp_path,
                                                                          monkeypatch):
    results = tmp_path / "results"
    results.mkdir()
    both = pd.concat([_runs("testbed A"), _runs("testbed B")], ignore_index=True)
    both.to_csv(results / "toy_runs.csv", index=False)
    monkeypatch.setattr(claims_ledger, "RESULTS", results)
    manifest = {"toy_runs.csv": {"commit": "abc", "testbed": "testbed A | testbed B"}}
    work = tmp_path / "work"
    work.mkdir()
    data = claims_ledger.benchmark_ledger("toy", work, manifest)
    assert set(data["provenance"]) == {"testbed A", "testbed B"}
    for _, rows in data.groupby("provenance"):  # the same runs twice: the same verdicts
        assert list(rows["verdict"]) == list(data[data["provenance"] == "testbed A"]["verdict"])
    hop = data[data["id"] == "hopgnn-speedup-vs-dgl"]
    assert (hop["verdict"] != "not applicable").all()
    greendy = data[data["id"] == "greendygnn-energy-vs-dgl-congested"]  # not run here
    assert set(greendy["verdict"]) == {"not applicable"}
    assert greendy["reason"].iloc[0] == "greendygnn_table1: no greendygnn runs"


def test_runs_differing_only_in_their_energy_model_are_one_ledger(tmp_path, monkeypatch):
    """HopGNN's speedup reads no energy: a campaign whose runs span two energy models is
    judged once on all of them; the provenance names both."""
    results = tmp_path / "results"
    results.mkdir()
    v2 = "synthetic v2; congestion v2; dilation per workload; target energy v2"
    v3 = v2.replace("target energy v2", "target energy v3")
    runs = _runs(None)
    half = runs.index < len(runs) // 2
    runs.assign(testbed=[v2 if h else v3 for h in half]).to_csv(results / "toy_runs.csv",
                                                                 index=False)
    monkeypatch.setattr(claims_ledger, "RESULTS", results)
    work = tmp_path / "work"
    work.mkdir()
    data = claims_ledger.benchmark_ledger(
        "toy", work, {"toy_runs.csv": {"commit": "abc", "testbed": f"{v2} | {v3}"}})
    assert set(data["provenance"]) == {f"{v2} | {v3}"}
    hop = data[data["id"] == "hopgnn-speedup-vs-dgl"]
    assert len(hop) == 1 and hop["verdict"].iloc[0] not in ("not applicable",
                                                             "not comparable")


def test_an_error_in_a_figure_fails_the_ledger(tmp_path, monkeypatch):
    results = tmp_path / "results"
    results.mkdir()
    _runs(None).drop(columns=["mean_epoch_time_s"]).to_csv(results / "bad_runs.csv",
                                                            index=False)
    monkeypatch.setattr(claims_ledger, "RESULTS", results)
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(KeyError):  # once filed as "not measured"
        claims_ledger.benchmark_ledger(
            "bad", work, {"bad_runs.csv": {"commit": "abc", "testbed": "unversioned"}})


def test_a_new_result_gets_an_entry_and_an_old_one_keeps_its_own(tmp_path, monkeypatch):
    results = tmp_path / "results"
    results.mkdir()
    (results / "old.json").write_text("{}")
    (results / "new_runs.csv").write_text(
        _runs("synthetic v1; congestion v1; dilation per run; target energy v1")
        .to_csv(index=False))
    monkeypatch.setattr(provenance, "RESULTS", results)
    monkeypatch.setattr(provenance, "MANIFEST", results / "PROVENANCE.json")
    (results / "PROVENANCE.json").write_text(json.dumps(
        {"old.json": {"commit": "0ld", "testbed": "unversioned, made at 0ld"},
         "gone.json": {"commit": "x", "testbed": "y"}}))
    made = provenance.update()
    assert made["old.json"] == {"commit": "0ld", "testbed": "unversioned, made at 0ld"}
    assert "gone.json" not in made
    assert made["new_runs.csv"]["testbed"] == ("synthetic v1; congestion v1; dilation per run; "
                                               "target energy v1")


def test_a_result_made_anew_gets_its_new_testbed(tmp_path, monkeypatch):
    """A runs table collected again from re-priced runs (changed in the working tree) is on
    their testbed now, and so are its figures; an unchanged result keeps its entry."""
    results = tmp_path / "results"
    (results / "toy_figures").mkdir(parents=True)
    old, new = "synthetic v2; target energy v2", "synthetic v2; target energy v3"
    _runs(old).to_csv(results / "toy_runs.csv", index=False)
    (results / "toy_figures" / "fig.csv").write_text("a\n1\n")
    (results / "kept.json").write_text("{}")
    monkeypatch.setattr(provenance, "RESULTS", results)
    monkeypatch.setattr(provenance, "MANIFEST", results / "PROVENANCE.json")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    provenance.update(refresh=provenance.remade())
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "results"], check=True)
    first = provenance.update(refresh=provenance.remade())
    assert first["toy_runs.csv"]["testbed"] == old
    assert provenance.remade() == set()
    _runs(new).to_csv(results / "toy_runs.csv", index=False)  # collected anew
    assert provenance.remade() == {"toy_runs.csv"}
    made = provenance.update(refresh=provenance.remade())
    assert made["toy_runs.csv"]["testbed"] == new
    assert made["toy_runs.csv"]["commit"].endswith("+uncommitted")
    assert made["toy_figures/fig.csv"]["testbed"] == new
    assert made["kept.json"] == first["kept.json"]
    assert provenance.update()["toy_runs.csv"]["testbed"] == new  # kept from then on


def test_a_benchmarks_figures_are_on_its_runs_testbed(tmp_path, monkeypatch):
    """Figures a collector drew from a benchmark's runs take the runs table's testbed, so the
    ledger judges that benchmark once, not once per commit that wrote one of its files."""
    results = tmp_path / "results"
    (results / "toy_figures").mkdir(parents=True)
    (results / "mixed_figures").mkdir()
    testbed = "synthetic v2; congestion v2; dilation per workload; target energy v2"
    _runs(testbed).to_csv(results / "toy_runs.csv", index=False)
    pd.concat([_runs("testbed A"), _runs("testbed B")]).to_csv(results / "mixed_runs.csv",
                                                                index=False)
    for name in ("toy_figures/hopgnn_fig11.csv", "mixed_figures/hopgnn_fig11.csv",
                 "other_figures.json"):
        (results / name).write_text("{}")
    monkeypatch.setattr(provenance, "RESULTS", results)
    monkeypatch.setattr(provenance, "MANIFEST", results / "PROVENANCE.json")
    made = provenance.update()
    assert made["toy_figures/hopgnn_fig11.csv"]["testbed"] == testbed
    assert made["mixed_runs.csv"]["testbed"] == "testbed A | testbed B"
    assert made["mixed_figures/hopgnn_fig11.csv"]["testbed"] == "testbed A | testbed B"
    assert made["other_figures.json"]["testbed"].startswith("unversioned")
    # an entry recorded before (its own commit's "unversioned") is brought to the runs'
    made["toy_figures/hopgnn_fig11.csv"]["testbed"] = "unversioned, made at 0ld"
    (results / "PROVENANCE.json").write_text(json.dumps(made))
    assert provenance.update()["toy_figures/hopgnn_fig11.csv"]["testbed"] == testbed
