"""All systems side by side: every system that ran the same workload (dataset, model,
depth, workers, batch size, network, congestion and its reach — which traffic it delayed —,
epochs), on whatever partitioning it trains on, by epoch time, traffic per step (all kinds,
and remote feature rows alone), modelled network time per step, energy (the target model),
test accuracy and epoch time over the oracle's (the compute-only limit, same seed) — each
the mean over seeds with the standard deviation. A system that ran on several
partitionings of one workload appears once per partitioning (``default (random4)``); BGL
names its cache (``bgl (no cache)``, ``bgl (FIFO 20,000 rows)``). Times are target
seconds."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from commgnn.report.figures.plotting import save_figure
from commgnn.report.labels import bgl_cache, reach_column, reach_words
from commgnn.report.palette import system_styles
from commgnn.report.tables import concat_runs_tables

#: Runs compared side by side share all of these.
WORKLOAD = ["dataset", "model", "layers", "workers", "batch_size", "network", "congestion",
            "congestion_reach", "epochs"]
#: (runs-table column, what it is, unit) per panel; ``vs_oracle`` is computed here.
METRICS = (
    ("mean_epoch_time_s", "epoch time", "target s"),
    ("traffic_mb_per_step", "network traffic, all kinds", "MB / step"),
    ("fetch_mb_per_step", "remote feature rows", "MB / step"),
    ("network_all_s_per_step", "modelled network time", "target s / step"),
    ("energy_target_per_epoch_j", "energy (target model, all workers)", "J / epoch"),
    ("test_acc", "test accuracy", "fraction of test nodes"),
    ("vs_oracle", "epoch time over the oracle's", "× (1 = compute-only limit)"),
)
ORACLE = "oracle"


def load(inputs: list[Path]) -> pd.DataFrame:
    runs = concat_runs_tables(inputs)
    for column, _, _ in METRICS:
        if column != "vs_oracle" and column not in runs:
            runs[column] = math.nan  # a runs table from before the column existed
    return with_reach(runs)


def with_reach(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with ``congestion_reach`` known or marked unknown (an older runs table)."""
    return runs.assign(congestion_reach=reach_column(runs))


def _settings(runs: pd.DataFrame) -> pd.Series:
    """The setting an entry's name carries: BGL's cache (``no cache``, ``FIFO 20,000
    rows``); "" for every other system."""
    cache = runs["option_cache_rows"] if "option_cache_rows" in runs else \
        pd.Series(math.nan, index=runs.index)
    is_bgl = runs["base_system"] == "bgl"
    return pd.Series([bgl_cache(c) if b else "" for b, c in zip(is_bgl, cache, strict=True)],
                     index=runs.index, dtype=object)


def _entries(runs: pd.DataFrame) -> pd.Series:
    """Each run's name in the comparison: its system, with its setting where the name
    carries one (BGL's cache) and the partitioning when the system ran on several in the
    workload: ``bgl (no cache)``, ``default (random4)``."""
    several = runs.groupby([*WORKLOAD, "system"], dropna=False)["partitioning"].transform(
        "nunique") > 1
    parts = pd.concat([_settings(runs), runs["partitioning"].where(several, "")], axis=1)
    inner = parts.apply(lambda r: ", ".join(p for p in r if isinstance(p, str) and p),
                        axis=1) if len(runs) else pd.Series(dtype=object)
    return runs["system"].where(inner == "", runs["system"] + " (" + inner + ")")


def _over_oracle(runs: pd.DataFrame) -> pd.Series:
    """Epoch time over the same workload's and seed's oracle run (on the same partitioning
    when the oracle ran on it, else on its only one); NaN without one."""
    oracle = runs[runs["base_system"] == ORACLE]
    same = oracle.set_index([*WORKLOAD, "partitioning", "seed"])["mean_epoch_time_s"]
    ratio = runs.join(same.rename("o"), on=[*WORKLOAD, "partitioning", "seed"])["o"]
    single = oracle[oracle.groupby(WORKLOAD)["partitioning"].transform("nunique") == 1]
    other = single.set_index([*WORKLOAD, "seed"])["mean_epoch_time_s"]
    fallback = runs.join(other.rename("o"), on=[*WORKLOAD, "seed"])["o"]
    return runs["mean_epoch_time_s"] / ratio.fillna(fallback)


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per workload and entry: seeds, mean and ``_std`` of every metric."""
    runs = with_reach(runs)
    runs = runs.assign(entry=_entries(runs), vs_oracle=_over_oracle(runs))
    columns = [column for column, _, _ in METRICS]
    grouped = runs.groupby([*WORKLOAD, "entry"], dropna=False)
    data = grouped[columns].mean().join(grouped[columns].std().add_suffix("_std"))
    data = data.join(grouped.agg(base_system=("base_system", "first"),
                                 partitioning=("partitioning", "first"),
                                 seeds=("seed", "nunique"),
                                 time_dilation=("time_dilation", "mean")))
    return data.reset_index()[[*WORKLOAD, "entry", "base_system", "partitioning", "seeds",
                               "time_dilation", *[c for m in columns
                                                  for c in (m, f"{m}_std")]]]


def workload_label(row: pd.Series) -> str:
    congestion = "" if row["congestion"] == "none" else (
        f", congestion {row['congestion']}{reach_words(row.get('congestion_reach'))}")
    return (f"{row['dataset']} · {row['model']}-{row['layers']} · {row['workers']} workers · "
            f"batch {row['batch_size']} · {row['network']}{congestion} · "
            f"{row['epochs']} epochs")


#: The figure draws the workloads with the most systems (at least MIN_SHOWN), at most
#: MAX_SHOWN of them; the CSV holds every workload.
MIN_SHOWN, MAX_SHOWN = 2, 4


def shown(data: pd.DataFrame) -> pd.DataFrame:
    """The rows of the workloads the figure draws (most entries first, then in order)."""
    sizes = data.groupby(WORKLOAD, dropna=False)["entry"].transform("size")
    data = data[sizes >= min(MIN_SHOWN, sizes.max() if len(sizes) else 0)]
    order = data.assign(size=sizes).drop_duplicates(WORKLOAD).sort_values(
        ["size", *WORKLOAD], ascending=[False, *[True] * len(WORKLOAD)]).head(MAX_SHOWN)
    return data.merge(order[WORKLOAD], on=WORKLOAD)


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    data = table(load(inputs))
    styles = system_styles(list(zip(data["entry"], data["base_system"], strict=True)))
    groups = [group.sort_values("entry") for _, group in
              shown(data).groupby(WORKLOAD, sort=False, dropna=False)]
    cols, rows = 4, math.ceil(len(METRICS) / 4)
    heights = [rows * max(1.6, 0.28 * len(group) + 1.0) + 0.4 for group in groups] or [1.5]
    fig = plt.figure(figsize=(16, sum(heights) + 0.5), layout="constrained")
    fig.suptitle("All systems side by side (mean ± std over seeds)", fontsize=11)
    if not groups:
        fig.text(0.5, 0.5, "no runs", ha="center")
    subfigs = fig.subfigures(len(groups), 1, height_ratios=heights, squeeze=False)[:, 0] \
        if groups else []
    for sub, group in zip(subfigs, groups, strict=True):
        sub.suptitle(workload_label(group.iloc[0]), fontsize=9, fontweight="bold", x=0.01,
                     ha="left")
        axes = list(sub.subplots(rows, cols, squeeze=False).flat)
        for ax, (column, what, unit) in zip(axes, METRICS, strict=False):
            _panel(ax, group, column, what, unit, styles)
        for ax in axes[len(METRICS):]:
            ax.axis("off")
        if len(axes) > len(METRICS):  # the spare panel: which colour is which system
            axes[-1].legend(handles=[Patch(facecolor=styles[e][0], hatch=styles[e][1],
                                           edgecolor="0.25", label=e)
                                     for e in group["entry"]],
                            loc="center", fontsize=7, frameon=False)
    save_figure(fig, out_png, by_system=False)  # styled above, entry by entry
    return data


def _panel(ax, group: pd.DataFrame, column: str, what: str, unit: str,
           styles: dict[str, tuple[str, str]]) -> None:
    y = np.arange(len(group))
    values = group[column].to_numpy(dtype=float)
    errors = np.nan_to_num(group[f"{column}_std"].to_numpy(dtype=float))
    for i, (entry, value, error) in enumerate(zip(group["entry"], values, errors,
                                                  strict=True)):
        colour, hatch = styles[entry]
        if math.isnan(value):
            ax.text(0, i, " n/a", va="center", fontsize=7, color="0.4")
            continue
        ax.barh(i, value, xerr=error, color=colour, hatch=hatch, edgecolor="0.25",
                linewidth=0.5, error_kw={"elinewidth": 0.8, "capsize": 2})
    if column == "vs_oracle":
        ax.axvline(1.0, color="0.3", linewidth=0.8, linestyle=":")
    ax.set_yticks(y, group["entry"], fontsize=7)
    ax.invert_yaxis()
    ax.set_title(what, fontsize=8)
    ax.set_xlabel(unit, fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
