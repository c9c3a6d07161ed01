"""BGL as GreenDyGNN ran it — no feature cache (its Fig. 7: BGL at a 0 % hit rate) — is
the default, the FIFO cache is the measured option, and every BGL row names its setting:
in the GreenDyGNN figures' labels, the comparison's entries and the ledger's text (the
claims still select BGL rows by method)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from commgnn.report.claims import judge, workload
from commgnn.report.figures import compare
from commgnn.report.labels import bgl_cache
from commgnn.systems.bgl.system import BGLSystem
from commgnn.systems.greendygnn.claims import CLAIMS
from commgnn.systems.greendygnn.figures.greendygnn_runs import label_runs, method

ROOT = Path(__file__).parents[2]
BY_ID = {claim.id: claim for claim in CLAIMS}


def test_the_default_is_no_cache_as_greendygnns_bgl():
    assert BGLSystem.options["cache_rows"]["default"] == 0
    assert BGLSystem.resolve_options({})["cache_rows"] == 0
    assert BGLSystem.resolve_options({"cache_rows": 20000})["cache_rows"] == 20000
    for config in (ROOT / "config.yaml", ROOT / "configs" / "compare.yaml"):
        systems = yaml.safe_load(config.read_text())["systems"]
        assert systems.get("bgl", {}).get("cache_rows", 0) == 0, config


def _runs(*caches) -> pd.DataFrame:
    rows = [{"system": f"bgl-{i}", "base_system": "bgl", "option_cache_rows": c}
            for i, c in enumerate(caches)]
    rows.append({"system": "default", "base_system": "default",
                 "option_cache_rows": float("nan")})
    frame = pd.DataFrame(rows)
    frame["method"] = frame.apply(method, axis=1)
    frame["window"] = float("nan")
    return frame


def test_a_bgl_runs_label_names_its_cache_and_its_method_stays_bgl():
    frame = label_runs(_runs(0, 20000, float("nan")))
    assert list(frame["method"]) == ["BGL", "BGL", "BGL", "DGL"]
    assert list(frame["label"]) == ["BGL (no cache)", "BGL (FIFO 20,000 rows)",
                                    "BGL (cache not recorded)", "DGL"]
    assert bgl_cache(7000) == "FIFO 7,000 rows" and bgl_cache("0") == "no cache"


def test_the_comparison_entry_names_bgls_cache():
    runs = pd.DataFrame([{"dataset": "d", "model": "sage", "layers": 2, "workers": 4,
                          "batch_size": 1024, "network": "n", "congestion": "none",
                          "epochs": 3, "system": s, "base_system": b, "partitioning": p,
                          "seed": 0, "mean_epoch_time_s": 1.0, "time_dilation": 1.0,
                          "option_cache_rows": c, "traffic_mb_per_step": 1.0,
                          "fetch_mb_per_step": 1.0, "network_all_s_per_step": 0.1,
                          "energy_target_per_epoch_j": 1.0, "test_acc": 0.5}
                         for s, b, p, c in (("bgl", "bgl", "metis4", 0),
                                            ("bgl-fifo", "bgl", "metis4", 20000),
                                            ("greendygnn", "greendygnn", "metis4", 20000),
                                            ("default", "default", "metis4", None),
                                            ("default", "default", "random4", None))])
    assert sorted(compare.table(runs)["entry"]) == [
        "bgl (no cache)", "bgl-fifo (FIFO 20,000 rows)", "default (metis4)",
        "default (random4)", "greendygnn"]


def _cell(bgl_label: str) -> list[dict]:
    work = {"dataset": "synth-arxiv", "model": "sage", "layers": 2, "workers": 4,
            "partitioning": "metis4", "batch_size": 1000, "network": "congested", "seeds": 3}
    times = {"DGL": 2.0, "BGL": 1.5, "RapidGNN": 1.0, "GreenDyGNN": 0.9}
    return [{**work, "method": m, "label": bgl_label if m == "BGL" else m, "epoch_time_s": t}
            for m, t in times.items()]


def test_the_ledger_text_names_bgls_cache():
    runs = pd.DataFrame({"base_system": ["default", "bgl", "rapidgnn", "greendygnn"],
                         "time_dilation": [60.0] * 4})
    for label in ("BGL (no cache)", "BGL (FIFO 20,000 rows)"):
        table = {"greendygnn_table1": pd.DataFrame(_cell(label))}
        fastest = judge(BY_ID["greendygnn-epoch-time-fastest"], table, runs, {})
        assert fastest["our_value"] == 1.0  # BGL selected by method all the same
        assert label in fastest["workload"] and label in fastest["reason"]
        gain = judge(BY_ID["greendygnn-epoch-time"], table, runs, {})
        assert f"fastest in 1/1 cells among DGL, {label}, RapidGNN, GreenDyGNN" in \
            gain["reason"]
    assert workload(pd.DataFrame(_cell("BGL (no cache)"))).endswith("BGL (no cache)")
