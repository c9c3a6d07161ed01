"""Every figure colours a system's series with the system's own colour (report/palette.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import matplotlib
import pandas as pd
import pytest
from matplotlib.colors import to_hex

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from commgnn.report import palette
from commgnn.report.figures.plotting import save_figure
from commgnn.systems.registry import get_system


def colour(name: str) -> str:
    return get_system(name).colour.lower()


@pytest.mark.parametrize(("label", "system"), [
    ("DGL", "default"), ("DGL-METIS", "default"), ("DGL (global schedule)", "default"),
    ("LO", "default"), ("GCN", "default"), ("dgl-global", None), ("default", "default"),
    ("RapidGNN", "rapidgnn"), ("BGL", "bgl"), ("GreenDyGNN-static(16)", "greendygnn"),
    ("greendygnn-heuristic", "greendygnn"), ("HopGNN", "hopgnn"), ("+MG+PG", "hopgnn"),
    ("All", "hopgnn"), ("P3", "p3"), ("p3+pipeline", "p3"), ("P3 (pipelined)", "p3"),
    ("Grappa", "grappa"), ("Cluster-GCN", "clustergcn"), ("DistDGL", "distdgl"),
    ("oracle", "oracle"), ("paper", None), ("Allreduce", None),
])
def test_a_label_names_its_system(label, system):
    assert palette.label_system(label) == system


def test_a_figure_takes_each_systems_colour_a_variant_its_hatch_and_the_legend_too(tmp_path):
    frame = pd.DataFrame({"DGL": [1.0, 2.0], "RapidGNN": [0.5, 1.0],
                          "DGL (global schedule)": [1.5, 2.5]}, index=["a", "b"])
    fig, (left, right) = plt.subplots(1, 2)
    frame.plot.bar(ax=left)
    left.plot([0, 1], [1, 1], label="paper", color="black")
    left.legend()
    right.barh(["HopGNN", "p3+pipeline", "something else"], [1, 2, 3])
    save_figure(fig, tmp_path / "f.png")
    bars = {c.get_label(): c.patches for c in left.containers}
    assert {to_hex(p.get_facecolor()) for p in bars["DGL"]} == {colour("default")}
    assert {to_hex(p.get_facecolor()) for p in bars["RapidGNN"]} == {colour("rapidgnn")}
    variant = bars["DGL (global schedule)"]
    assert {to_hex(p.get_facecolor()) for p in variant} == {colour("default")}
    assert {p.get_hatch() for p in bars["DGL"]} == {None}
    assert {p.get_hatch() for p in variant} == {palette.HATCHES[1]}
    legend = {t.get_text(): h for t, h in zip(left.get_legend().get_texts(),
                                              left.get_legend().legend_handles, strict=True)}
    assert to_hex(legend["DGL (global schedule)"].get_facecolor()) == colour("default")
    assert legend["DGL (global schedule)"].get_hatch() == palette.HATCHES[1]
    assert to_hex(legend["paper"].get_color()) == "#000000"  # not a system's: untouched
    hop, p3, other = right.containers[0].patches
    assert to_hex(hop.get_facecolor()) == colour("hopgnn")
    assert to_hex(p3.get_facecolor()) == colour("p3")
    assert to_hex(other.get_facecolor()) == palette.MUTED[0].lower()  # the cycle's first
    assert (tmp_path / "f.pdf").is_file()


def test_figure_jobs_take_the_colours_given_without_importing_the_systems(tmp_path):
    """The workflow passes `--systems`; the figure process then never imports torch."""
    given = {"default": {"colour": "#123456", "figure_labels": "DGL"}}
    script = (
        "import json, sys\n"
        "from commgnn.report.palette import use_declarations, system_colour\n"
        f"use_declarations(json.loads({json.dumps(json.dumps(given))}))\n"
        "from commgnn.report.figures.plotting import save_figure\n"
        "import matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots(); ax.bar(['x'], [1], label='DGL'); "
        f"save_figure(fig, {str(tmp_path / 'g.png')!r})\n"
        "assert system_colour('default') == '#123456'\n"
        "print('torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[-1] == "False"
