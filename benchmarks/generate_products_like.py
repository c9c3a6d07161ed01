"""Time generating and writing a synthetic preset (default: products-like) and record peak RSS.

Usage::

    python benchmarks/generate_products_like.py [--preset products-like] [--seed 0]
        [--out DIR] [--keep] [--results benchmarks/results/generate_products_like.json]

Without ``--out`` the dataset goes to a fresh temporary directory, which is deleted afterwards
unless ``--keep`` is given (products-like is ~3.7 GB on disk). The JSON records the exact
command line, the spec, wall times (total generation, the share spent in ``symmetrize_csr``,
writing), peak resident memory of this process (``resource.getrusage``), graph statistics,
and machine facts. No git information is read.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from commgnn.data import synthetic
from commgnn.data.store import graph_statistics, write_dataset

REPO = Path(__file__).resolve().parents[1]
DEFAULT_RESULTS = REPO / "benchmarks" / "results" / "generate_products_like.json"


def peak_rss_bytes() -> int:
    """Peak RSS of this process (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir() if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="products-like", choices=sorted(synthetic.PRESETS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None,
                        help="dataset directory (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the dataset when --out is not given")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    args = parser.parse_args(argv)

    spec = {"source": "synthetic", "preset": args.preset, "seed": args.seed}
    tmp_root = None
    if args.out is None:
        tmp_root = Path(tempfile.mkdtemp(prefix="commgnn-bench-"))
        out = tmp_root / args.preset
    else:
        out = args.out

    # time the CSR build separately (it is looked up in the synthetic module at call time)
    sym_seconds = []
    original_symmetrize = synthetic.symmetrize_csr

    def timed_symmetrize(*a, **kw):
        t = time.perf_counter()
        try:
            return original_symmetrize(*a, **kw)
        finally:
            sym_seconds.append(time.perf_counter() - t)

    synthetic.symmetrize_csr = timed_symmetrize
    try:
        t0 = time.perf_counter()
        ds = synthetic.generate_synthetic(spec, name=args.preset)
        gen_s = time.perf_counter() - t0
    finally:
        synthetic.symmetrize_csr = original_symmetrize
    rss_after_gen = peak_rss_bytes()
    print(f"generated {ds.num_nodes:,} nodes / {ds.num_edges:,} CSR entries in {gen_s:.1f} s "
          f"(symmetrize_csr {sum(sym_seconds):.1f} s), peak RSS {rss_after_gen / 2**30:.2f} GiB",
          flush=True)

    t0 = time.perf_counter()
    write_dataset(ds, out, source=spec)
    write_s = time.perf_counter() - t0
    size = dir_size(out)
    print(f"wrote {size / 2**30:.2f} GiB to {out} in {write_s:.1f} s", flush=True)

    stats = graph_statistics(ds)
    deg = ds.degrees()
    rows = np.repeat(np.arange(ds.num_nodes, dtype=np.int64), deg)
    homophily = float((ds.labels[rows] == ds.labels[ds.indices]).mean())
    del rows
    top = np.sort(deg)[::-1][: max(1, ds.num_nodes // 100)]
    record = {
        "command": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]),
        "spec": spec,
        "resolved_params": synthetic.resolve_synthetic_spec(spec),
        "generation_wall_s": round(gen_s, 3),
        "symmetrize_csr_wall_s": round(sum(sym_seconds), 3),
        "write_wall_s": round(write_s, 3),
        "peak_rss_bytes_after_generation": rss_after_gen,
        "peak_rss_bytes": peak_rss_bytes(),
        "peak_rss_gib": round(peak_rss_bytes() / 2**30, 3),
        "dataset_bytes_on_disk": size,
        "dataset_dir": str(out),
        "dataset_deleted": tmp_root is not None and not args.keep,
        "stats": {**stats, "edge_homophily": round(homophily, 5),
                  "median_degree": float(np.median(deg)),
                  "top1pct_endpoint_share": round(float(top.sum() / deg.sum()), 5)},
        "machine": {"python": platform.python_version(), "numpy": np.__version__,
                    "platform": platform.platform(), "cpus": os.cpu_count()},
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(record, indent=2) + "\n")
    print(f"results -> {args.results}")
    if tmp_root is not None and not args.keep:
        shutil.rmtree(tmp_root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
