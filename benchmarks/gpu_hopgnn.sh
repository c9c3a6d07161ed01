#!/usr/bin/env bash
# HopGNN against DGL on a GPU machine (benchmarks/configs/hopgnn_eval_products_gpu.yaml):
# the dataset and partition, then each run alone, the runs table refreshed after each so that
# a run cut short by the machine's time still leaves the ones before it. Usage (repository
# root, the project installed): benchmarks/gpu_hopgnn.sh OUT [CORES]  (CORES: default all)
set -u
out=${1:?usage: gpu_hopgnn.sh OUT}
cores=${2:-$(nproc)}
config=benchmarks/configs/hopgnn_eval_products_gpu.yaml
root=results/bench-hopgnn-gpu
run_dir=$root/runs/%s/products-like-300k/metis4/sage_h128_b1024_10gbe_s0
mkdir -p "$out"
stamp() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$out/steps.txt"; }
stamp setup
python3 -m snakemake --cores "$cores" --nolock --configfile $config --until partition \
    > "$out/setup.log" 2>&1 || { stamp "setup failed"; exit 1; }
for system in dgl hopgnn hopgnn-naive hopgnn-pg; do
    stamp "run $system"
    target=$(printf "$run_dir" "$system")
    python3 -m snakemake "$target" --cores "$cores" --nolock --configfile $config \
        > "$out/run-$system.log" 2>&1 || stamp "$system failed"
    python3 -m commgnn runs-table --out "$out/runs.csv" $(ls -d $root/runs/*/*/*/*_s0 2>/dev/null) \
        > /dev/null 2>&1
    tar czf "$out/runs.tgz" --exclude='*.pt' $root/runs 2>/dev/null
done
stamp done
