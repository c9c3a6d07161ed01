"""The claims ledger's verdicts against hand-made claims and tables: inside the band,
outside it in the claim's direction or against it, a parity claim, undilated runs, a
figure that was not built, a table without the rows."""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd
import pytest

from commgnn.report.claims import (
    Claim,
    Measured,
    above,
    fixed_band,
    judge,
    mean_spread,
    ratio_band,
    select,
    tolerance,
)


def _speedup(table: pd.DataFrame) -> Measured:
    rows = select(table, "HopGNN", variant="All")
    value, spread = mean_spread(rows["speedup"])
    return Measured(value, spread, 2.0, rows)


FASTER = above(1.0)


def _claim(band=None, direction=FASTER, dilated=True) -> Claim:
    return Claim(id="toy", paper="HopGNN", claim="HopGNN is faster", paper_value="2×",
                 figure="toy_fig", measure=_speedup, band=band or ratio_band(1.33),
                 direction=direction, systems=("hopgnn",), dilated=dilated)


def _table(*speedups: float) -> dict[str, pd.DataFrame]:
    return {"toy_fig": pd.DataFrame({"variant": ["All"] * len(speedups) + ["DGL"],
                                     "dataset": ["uk-like"] * (len(speedups) + 1),
                                     "speedup": [*speedups, 1.0]})}


RUNS = pd.DataFrame({"base_system": ["hopgnn", "default"], "time_dilation": [60.0, 60.0]})


@pytest.mark.parametrize(("speedups", "verdict"), [
    ((1.8, 2.2), "reproduced"),  # mean 2.0, inside [1.50, 2.66]
    ((1.2, 1.3), "direction"),  # 1.25: below the band, still faster
    ((0.8, 0.9), "not reproduced"),  # slower
])
def test_a_ratio_claim_against_its_band_and_direction(speedups, verdict):
    row = judge(_claim(), _table(*speedups), RUNS, {"toy_fig": "out/figures/toy_fig.csv"})
    assert row["verdict"] == verdict
    assert row["our_value"] == pytest.approx(sum(speedups) / 2)
    assert row["our_spread"] == pytest.approx(pd.Series(speedups).std())
    assert (row["band_low"], row["band_high"]) == pytest.approx((2 / 1.33, 2 * 1.33))
    assert row["n"] == 2 and row["workload"] == "uk-like"
    assert row["rule"] == "system_figure" and row["output"] == "out/figures/toy_fig.csv"


def test_a_parity_claim_has_no_direction():
    claim = _claim(band=tolerance(0.5), direction=None)
    assert judge(claim, _table(0.2, 0.4), RUNS, {})["verdict"] == "reproduced"
    assert judge(claim, _table(1.2, 1.4), RUNS, {})["verdict"] == "not reproduced"


def test_a_printed_range_is_used_as_printed():
    claim = _claim(band=fixed_band(1.2, 4.2))
    assert judge(claim, _table(4.0, 4.4), RUNS, {})["verdict"] == "reproduced"
    assert judge(claim, _table(5.0, 5.0), RUNS, {})["verdict"] == "direction"


def test_undilated_runs_make_a_time_claim_not_comparable():
    raw = RUNS.assign(time_dilation=[1.0, 1.0])
    row = judge(_claim(), _table(1.8, 2.2), raw, {})
    assert row["verdict"] == "not comparable"
    assert "undilated" in row["reason"]
    assert row["our_value"] == pytest.approx(2.0)  # still shown
    # a claim on counts is not gated
    assert judge(_claim(dilated=False), _table(1.8, 2.2), raw, {})["verdict"] == "reproduced"


def test_a_missing_figure_or_rows_is_not_measured():
    row = judge(_claim(), {}, RUNS, {})
    assert row["verdict"] == "not measured"
    assert row["reason"] == "toy_fig was not built: its systems did not run"
    no_rows = {"toy_fig": pd.DataFrame({"variant": ["DGL"], "speedup": [1.0]})}
    row = judge(_claim(), no_rows, RUNS, {})
    assert (row["verdict"], row["reason"]) == ("not measured", "toy_fig: no HopGNN rows")
    assert math.isnan(row["our_value"])


def test_a_measurement_can_say_whether_the_effect_holds():
    def measure(table: pd.DataFrame) -> Measured:
        rows = select(table, "HopGNN", variant="All")
        return Measured(float(rows["speedup"].mean()), math.nan, 2.0, rows, holds=False)

    claim = Claim(id="toy", paper="HopGNN", claim="c", paper_value="2×", figure="toy_fig",
                  measure=measure, band=ratio_band(1.33), direction=above(1.0),
                  dilated=False)
    # 1.25 would pass the value's direction test; the measurement says the effect fails
    assert judge(claim, _table(1.2, 1.3), RUNS, {})["verdict"] == "not reproduced"


def test_a_measurement_can_set_its_band_and_an_unmet_condition():
    def measure(unmet: str):
        def inner(table: pd.DataFrame) -> Measured:
            rows = select(table, "HopGNN", variant="All")
            return Measured(float(rows["speedup"].mean()), math.nan, math.nan, rows,
                            band=(1.2, 4.2), unmet=unmet)
        return inner

    def claim(unmet: str) -> Claim:
        return Claim(id="toy", paper="HopGNN", claim="c", paper_value="1.2–4.2×",
                     figure="toy_fig", measure=measure(unmet), band=ratio_band(1.33),
                     direction=above(1.0), dilated=False)

    row = judge(claim(""), _table(3.0, 4.0), RUNS, {})
    assert (row["verdict"], row["band_low"], row["band_high"]) == ("reproduced", 1.2, 4.2)
    row = judge(claim("slower than P3 in a cell"), _table(3.0, 4.0), RUNS, {})
    assert row["verdict"] == "direction"
    assert row["reason"] == "3.5 in [1.2, 4.2], same direction; slower than P3 in a cell"


def test_only_the_measured_rows_networks_decide_the_dilation():
    table = {"toy_fig": pd.DataFrame({"variant": ["All", "All"], "network": ["10gbe-f60"] * 2,
                                      "speedup": [1.8, 2.2]})}
    runs = pd.DataFrame({"base_system": ["hopgnn", "hopgnn"],
                         "network": ["10gbe-f60", "10gbe"], "time_dilation": [60.0, 1.0]})
    assert judge(_claim(), table, runs, {})["verdict"] == "reproduced"  # the raw run aside
    raw = {"toy_fig": table["toy_fig"].assign(network="10gbe")}
    assert judge(_claim(), raw, runs, {})["verdict"] == "not comparable"


def test_rows_named_otherwise_than_the_runs_fall_back_to_all_the_systems_runs():
    table = {"toy_fig": pd.DataFrame({"variant": ["All"], "dataset": ["Average"],
                                      "speedup": [2.0]})}
    runs = pd.DataFrame({"base_system": ["hopgnn"], "dataset": ["tiny"],
                         "time_dilation": [1.0]})
    assert judge(_claim(), table, runs, {})["verdict"] == "not comparable"


@pytest.mark.parametrize(("clock", "verdict"), [
    ("dilated", "reproduced"),
    ("accelerator, emulated network", "reproduced"),  # a GPU at f = 1: judged
    ("accelerator, real network", "reproduced"),  # a real cluster: judged
    ("raw CPU", "not comparable"),
    ("accelerator, no network", "not comparable"),  # one host, nothing emulated
])
def test_runs_on_an_accelerator_are_judged_like_dilated_ones(clock, verdict):
    runs = pd.DataFrame({"base_system": ["hopgnn", "default"], "time_dilation": [1.0, 1.0],
                         "clock": [clock, clock]})
    row = judge(_claim(), _table(1.8, 2.2), runs, {})
    assert row["verdict"] == verdict
    assert row["clock"] == clock
    if verdict == "not comparable":
        assert row["reason"].startswith(f"runs on the {clock} clock (undilated)")


def test_a_row_names_every_clock_behind_it_and_one_unjudged_clock_gates_it():
    runs = pd.DataFrame({"base_system": ["hopgnn", "hopgnn"], "time_dilation": [1.0, 60.0],
                         "clock": ["accelerator, emulated network", "dilated"]})
    row = judge(_claim(), _table(1.8, 2.2), runs, {})
    assert (row["verdict"], row["clock"]) == ("reproduced",
                                              "accelerator, emulated network, dilated")
    mixed = runs.assign(clock=["raw CPU", "dilated"])
    assert judge(_claim(), _table(1.8, 2.2), mixed, {})["verdict"] == "not comparable"
    old = RUNS  # a runs table from before the clock column: by dilation
    assert judge(_claim(), _table(1.8, 2.2), old, {})["clock"] == "dilated"


def test_an_energy_claim_says_where_its_energy_came_from():
    from commgnn.report.claims import METERED_ENERGY, TARGET_ENERGY

    def energy_claim(source: str) -> Claim:
        return Claim(id="toy", paper="HopGNN", claim="c", paper_value="2×",
                     figure="toy_fig", measure=_speedup, band=ratio_band(1.33),
                     direction=above(1.0), systems=("hopgnn",), energy=source)

    runs = RUNS.assign(energy_meter=["nvml+rapl", "nvml+rapl"])
    assert judge(energy_claim(TARGET_ENERGY), _table(2.0), runs, {})["energy"] == \
        "modelled: target-machine model"
    assert judge(energy_claim(METERED_ENERGY), _table(2.0), runs, {})["energy"] == \
        "metered: nvml+rapl"
    modelled = RUNS.assign(energy_meter=["modelled", "modelled"])
    assert judge(energy_claim(METERED_ENERGY), _table(2.0), modelled, {})["energy"] == \
        "modelled: modelled"
    assert judge(_claim(), _table(2.0), runs, {})["energy"] == ""  # not an energy claim


def _fixed(value: float, noise: float, geomean: float = math.nan, seeds: int | None = None):
    """A measure that returns ``value`` with the seeds' spread ``noise`` (and ``geomean``)
    on the table's HopGNN rows."""
    def measure(table: pd.DataFrame) -> Measured:
        return Measured(value, 0.5, 2.0, select(table, "HopGNN", variant="All"),
                        geomean=geomean, noise=noise, seeds=seeds)
    return measure


def _toy(measure, **fields) -> Claim:
    return Claim(**{"id": "toy", "paper": "HopGNN", "claim": "c", "paper_value": "2×",
                    "figure": "toy_fig", "measure": measure, "band": ratio_band(1.33),
                    "direction": FASTER, "systems": ("hopgnn",), **fields})


@pytest.mark.parametrize(("value", "noise", "seeds", "verdict", "why"), [
    (1.2, 0.05, 3, "direction", ""),  # 0.2 past 1, beyond 2 × 0.05
    (1.2, 0.15, 3, "not reproduced",
     "effect 0.2 < 0.3 (max(0.02, 2 × the seeds' spread 0.15))"),
    (1.015, math.nan, 1, "not reproduced",  # one seed: the 2 % minimum alone
     "effect 0.015 < 0.02 (one seed: the minimum effect alone)"),
    (1.015, math.nan, None, "not reproduced",
     "effect 0.015 < 0.02 (no seed spread recorded: the minimum effect alone)"),
    (1.05, math.nan, 1, "direction", ""),
])
def test_a_direction_counts_only_past_the_noise_floor(value, noise, seeds, verdict, why):
    """The spread across cells (0.5 here) is not noise: cells differ by design."""
    row = judge(_toy(_fixed(value, noise, seeds=seeds)), _table(1.0), RUNS, {})
    assert row["verdict"] == verdict
    assert why in row["reason"]
    if verdict == "not reproduced":
        assert "same direction within the noise floor" in row["reason"]


def test_the_seeds_spread_is_pooled_from_the_figures_per_cell_deviations():
    from commgnn.report.claims import seed_noise

    rows = pd.DataFrame({"speedup": [2.0, 3.0], "speedup_std": [0.3, 0.4], "seeds": [3, 2],
                         "epoch_time_s": [1.0, 2.0], "epoch_time_std_s": [0.1, 0.1]})
    assert seed_noise(rows, "speedup") == (pytest.approx(math.sqrt((0.09 + 0.16) / 2)), 2)
    assert seed_noise(rows, "epoch_time_s") == (pytest.approx(0.1), 2)
    noise, seeds = seed_noise(rows.drop(columns="seeds"), "gap")
    assert math.isnan(noise) and seeds is None


def test_a_direction_declares_its_null_and_minimum():
    from commgnn.report.claims import below

    saving = below(0.0, min_effect=2.0)  # a claim in percent units
    assert saving.holds(-3.0) and not saving.holds(1.0)
    assert saving.effect(-3.0) == 3.0 and saving.floor(math.nan) == 2.0
    assert saving.floor(1.5) == 3.0 and str(saving) == "< 0"
    row = judge(_toy(_fixed(0.5, 0.1), direction=below(1.0)), _table(1.0), RUNS, {})
    assert row["verdict"] == "direction"  # 0.5 below 1 by 0.5 > 0.2


def test_means_that_disagree_on_the_direction_are_not_a_direction():
    """HopGNN over P3 on uk-like: arithmetic 1.13, geometric 0.63."""
    row = judge(_toy(_fixed(1.13, 0.01, geomean=0.63)), _table(1.0), RUNS, {})
    assert row["verdict"] == "not reproduced"
    assert "the arithmetic mean 1.13 and the geometric mean 0.63 disagree" in row["reason"]
    assert row["geomean"] == pytest.approx(0.63)
    agree = judge(_toy(_fixed(1.13, 0.01, geomean=1.1)), _table(1.0), RUNS, {})
    assert agree["verdict"] == "direction"


def test_ratio_means_are_arithmetic_with_the_geometric_beside():
    from commgnn.report.claims import ratio_means

    mean, spread, geomean = ratio_means(pd.Series([0.25, 4.0]))
    assert (mean, geomean) == pytest.approx((2.125, 1.0))
    assert spread == pytest.approx(pd.Series([0.25, 4.0]).std())
    assert math.isnan(ratio_means(pd.Series([0.0, 2.0]))[2])  # no log of 0


def test_a_value_that_cannot_come_out_otherwise_is_by_construction():
    claim = _toy(_fixed(3.0, 0.0), by_construction="the time steps per iteration")
    row = judge(claim, _table(1.0), RUNS, {})
    assert row["verdict"] == "by construction"
    assert row["reason"] == "3: the time steps per iteration"
    assert row["our_value"] == 3.0  # shown, not counted


def test_a_figure_whose_runs_lack_what_it_needs_makes_its_claims_not_applicable(tmp_path):
    from commgnn.report.claims import ledger

    runs = tmp_path / "runs.csv"
    RUNS.to_csv(runs, index=False)
    data = ledger([_claim()], [runs], not_applicable={"toy_fig": "no hopgnn runs"})
    assert (data.loc[0, "verdict"], data.loc[0, "reason"]) == (
        "not applicable", "toy_fig: no hopgnn runs")
    assert ledger([_claim()], [runs]).loc[0, "verdict"] == "not measured"


def test_a_figure_written_as_not_applicable_or_with_no_rows_is_read_as_such(tmp_path):
    """The CSV ``commgnn figure`` writes for a figure that does not apply (and the empty
    file older runs wrote) files its claims "not applicable"; a header alone, not
    measured."""
    from commgnn.report.claims import ledger

    runs = tmp_path / "runs.csv"
    RUNS.to_csv(runs, index=False)
    figure = tmp_path / "toy_fig.csv"
    figure.write_text("not_applicable\nno cell with a baseline\n")
    row = ledger([_claim()], [runs, figure]).loc[0]
    assert (row["verdict"], row["reason"]) == ("not applicable",
                                               "toy_fig: no cell with a baseline")
    assert row["output"] == str(figure)
    figure.write_text("\n")
    row = ledger([_claim()], [runs, figure]).loc[0]
    assert (row["verdict"], row["reason"]) == (
        "not applicable", "toy_fig: the runs behind it give it no rows")
    figure.write_text("variant,speedup\n")
    row = ledger([_claim()], [runs, figure]).loc[0]
    assert (row["verdict"], row["reason"]) == ("not measured", "toy_fig has no rows")


def test_runs_of_different_testbeds_are_not_pooled():
    runs = RUNS.assign(testbed=["synthetic v1; congestion v1", "synthetic v2; congestion v1"])
    row = judge(_claim(), _table(1.8, 2.2), runs.assign(base_system="hopgnn"), {})
    assert row["verdict"] == "not comparable"
    assert row["reason"].startswith("runs of 2 testbeds pooled: judge each apart")
    assert row["provenance"] == "synthetic v1; congestion v1 | synthetic v2; congestion v1"
    one = judge(_claim(), _table(1.8, 2.2), RUNS.assign(testbed="synthetic v1"), {})
    assert (one["verdict"], one["provenance"]) == ("reproduced", "synthetic v1")
    assert judge(_claim(), _table(1.8, 2.2), RUNS, {})["provenance"] == "unrecorded"


def test_only_an_energy_claim_is_split_by_the_energy_model():
    """The energy model prices energy and nothing else: a time claim pools runs of two
    energy models, an energy claim does not."""
    from commgnn.report.claims import TARGET_ENERGY

    v2 = "synthetic v2; congestion v2; dilation per workload; target energy v2; evaluation v2"
    runs = RUNS.assign(base_system="hopgnn",
                       testbed=[v2, v2.replace("target energy v2", "target energy v3")])
    time = judge(_claim(), _table(1.8, 2.2), runs, {})
    assert time["verdict"] == "reproduced"
    assert time["provenance"] == f"{v2} | {v2.replace('v2; evaluation', 'v3; evaluation')}"
    energy = judge(replace(_claim(), energy=TARGET_ENERGY), _table(1.8, 2.2), runs, {})
    assert energy["verdict"] == "not comparable"
    assert energy["reason"].startswith("runs of 2 testbeds pooled")
    other = runs.assign(testbed=[v2, v2.replace("congestion v2", "congestion v3")])
    assert judge(_claim(), _table(1.8, 2.2), other, {})["verdict"] == "not comparable"


def test_an_accuracy_claim_over_partitionings_needs_one_evaluation_sample():
    claim = replace(_claim(), accuracy=True)
    old = "synthetic v2; congestion v2; dilation per workload; target energy v2"
    runs = RUNS.assign(base_system="hopgnn", partitioning=["chunk4", "metis4"], testbed=old)
    row = judge(claim, _table(1.8, 2.2), runs, {})
    assert row["verdict"] == "not comparable"
    assert row["reason"] == ("accuracies of runs on chunk4, metis4 scored on each "
                             "partition's own sample (before evaluation v2)")
    assert judge(claim, _table(1.8, 2.2), runs.assign(testbed=f"{old}; evaluation v2"),
                 {})["verdict"] == "reproduced"
    one = RUNS.assign(partitioning="metis4", testbed=old)  # one partitioning: one sample
    assert judge(claim, _table(1.8, 2.2), one, {})["verdict"] == "reproduced"
    assert judge(_claim(), _table(1.8, 2.2), runs, {})["verdict"] == "reproduced"  # not one
    unrecorded = judge(claim, _table(1.8, 2.2), None, {})  # nothing tells: not judged
    assert (unrecorded["verdict"], unrecorded["reason"]) == (
        "not comparable", "no runs recorded behind it, so nothing tells whether they were "
        "scored on one sample (evaluation v2)")


def test_a_scaled_stand_in_takes_its_papers_dataset_name():
    from commgnn.report.claims import paper_name

    names = {"products-like": "Products", "synth-products": "Products",
             "products-like-big": "Big"}
    assert paper_name("products-like", names) == "Products"
    assert paper_name("products-like-4", names) == "Products"
    assert paper_name("synth-products-0.25", names) == "Products"
    assert paper_name("products-like-big-2", names) == "Big"  # the longest key first
    assert paper_name("products-likely", names) is None
    assert paper_name("reddit-like", names) is None
