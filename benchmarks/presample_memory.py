"""Peak memory of presampling for 2 vs 20 epochs (it must not grow with the epoch count).

Each epoch count runs in a fresh process on the same 50k-node synthetic graph (4 METIS
parts, fan-outs [15, 10, 5], batch 1024); peak RSS comes from getrusage. Writes
benchmarks/results/presample_memory.json.

    .venv/bin/python benchmarks/presample_memory.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results" / "presample_memory.json"
CHILD = """
import json, resource, sys, time
from commgnn.sampling.presample import presample
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
meta = presample(sys.argv[1], sys.argv[2], sys.argv[3], fanouts=[15, 10, 5],
                 batch_size=1024, base_seed=0, epochs=int(sys.argv[4]))
print(json.dumps({"rss_before_kb": before,
                  "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "wall_s": time.perf_counter() - start,
                  "output_bytes": sum(f["bytes"] for f in meta["files"].values())}))
"""


def main() -> int:
    from commgnn.data.store import write_dataset
    from commgnn.data.synthetic import generate_synthetic
    from commgnn.partition import partition_graph, write_partition

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ds = generate_synthetic({"preset": "tiny", "nodes": 50000, "seed": 0}, name="p50k")
        write_dataset(ds, root / "ds")
        write_partition(partition_graph(ds, {"method": "metis", "parts": 4}), root / "part")
        rows = {}
        for epochs in (2, 20):
            proc = subprocess.run([sys.executable, "-c", CHILD, str(root / "ds"),
                                   str(root / "part"), str(root / f"pre{epochs}"),
                                   str(epochs)], capture_output=True, text=True, check=True)
            rows[str(epochs)] = json.loads(proc.stdout.strip().splitlines()[-1])
    result = {
        "command": ".venv/bin/python benchmarks/presample_memory.py",
        "graph": {"nodes": ds.num_nodes, "csr_entries": ds.num_edges, "parts": 4,
                  "fanouts": [15, 10, 5], "batch_size": 1024},
        "epochs": rows,
        "peak_growth_kb_2_to_20": rows["20"]["peak_rss_kb"] - rows["2"]["peak_rss_kb"],
        "date": time.strftime("%Y-%m-%d"),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
