#!/usr/bin/env bash
# HopGNN against DGL on a GPU machine: the dataset and partition, then each run of the config's
# first experiment alone (one GPU, timed runs must not share it), the runs table refreshed after
# each so that a run cut short by the machine's time still leaves the ones before it.
# Usage (repository root, the project installed):
#   benchmarks/gpu_hopgnn.sh OUT [CORES] [CONFIG]
# CORES: snakemake --cores (default all); CONFIG: default
# benchmarks/configs/hopgnn_eval_products_gpu.yaml (products-like at 300,000 nodes);
# benchmarks/configs/hopgnn_eval_products_gpu_full.yaml is the full 2.45 M-node preset.
set -u
out=${1:?usage: gpu_hopgnn.sh OUT [CORES] [CONFIG]}
cores=${2:-$(nproc)}
config=${3:-benchmarks/configs/hopgnn_eval_products_gpu.yaml}
mkdir -p "$out"
stamp() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$out/steps.txt"; }
# The run directories of the first experiment, one a line (results_dir/runs/<system>/<dataset>/
# <partitioning>/<model>_b<batch>_<network>_s<seed>).
targets=$(python3 - "$config" <<'PY'
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
e = c["experiments"][0]
for seed in e["seeds"]:  # every system of a seed before the next seed
    for s in e["systems"]:
        print(f"{c['results_dir']}/runs/{s}/{e['datasets'][0]}/{e['partitionings'][0]}/"
              f"{e['models'][0]}_b{e['batch_sizes'][0]}_{e['networks'][0]}_s{seed}")
PY
) || { stamp "cannot read $config"; exit 1; }
root=$(python3 -c "import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))['results_dir'])" "$config")
stamp "setup $config"
python3 -m snakemake --cores "$cores" --nolock --configfile "$config" --until partition \
    > "$out/setup.log" 2>&1 || { stamp "setup failed"; exit 1; }
for target in $targets; do
    name=${target#"$root"/runs/}
    name=${name%%/*}_s${target##*_s}
    stamp "run $name"
    python3 -m snakemake "$target" --cores "$cores" --nolock --configfile "$config" \
        > "$out/run-$name.log" 2>&1 || stamp "$name failed"
    python3 -m commgnn runs-table --out "$out/runs.csv" $(ls -d "$root"/runs/*/*/*/*_s? 2>/dev/null) \
        > /dev/null 2>&1
    tar czf "$out/runs.tgz" --exclude='*.pt' "$root/runs" 2>/dev/null
done
stamp done
