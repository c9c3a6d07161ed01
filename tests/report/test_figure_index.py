"""The figure index: every figure module indexed, the README's table the same as the
module's, and a run's index listing what it built with its rule and output."""

from __future__ import annotations

from pathlib import Path

from commgnn import figure_index
from commgnn.catalog import FIGURES


def test_every_figure_is_indexed_and_the_readme_says_the_same(repo_root):
    assert set(FIGURES) - {"figure_index"} == set(figure_index.INDEX)
    readme = (Path(repo_root) / "README.md").read_text()
    assert figure_index.markdown() in readme


def test_a_runs_index_lists_what_it_built(tmp_path):
    figures = tmp_path / "out" / "figures"
    figures.mkdir(parents=True)
    (figures / "hopgnn_fig11.csv").write_text("variant,speedup\nAll,1.5\n")
    (figures / "compare.csv").write_text("not_applicable\nno runs with a partner\n")
    data = figure_index.make([figures / "hopgnn_fig11.csv", figures / "compare.csv"],
                             figures / "figure_index.png")
    assert list(data["status"]) == ["built", "not applicable: no runs with a partner"]
    assert list(data["module"]) == ["hopgnn_fig11", "compare"]
    assert list(data["rule"]) == ["system_figure", "compare"]
    assert list(data["output"]) == [f"{tmp_path / 'out'}/figures/hopgnn_fig11.png",
                                    f"{tmp_path / 'out'}/figures/compare.png"]
    assert data.iloc[0][["paper", "figure"]].tolist() == ["HopGNN", "Figs. 11, 12"]
    assert (figures / "figure_index.pdf").stat().st_size > 0
