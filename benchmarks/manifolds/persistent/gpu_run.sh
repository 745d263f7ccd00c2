#!/bin/sh
# On the GPU machine, from the repository root after the build (make build):
#   sh benchmarks/manifolds/persistent/gpu_run.sh [OUTDIR]
# 1. the prototype's CUDA differential tests; 2. the expRNN training step (L 784, batch 128,
# hidden 170 and 512) on CUDA: eager's cell loop, torch.compile of the cell, torchc (its
# scan's per-step loop on CUDA), the persistent kernels; medians in one process per size.
OUT=${1:-${OUT:-/tmp}}
export PYTHONPATH=.
python -m pytest -q tests/test_manifolds_persistent.py 2>&1 | tail -15
for h in 170 512; do
  python benchmarks/manifolds/bench_rnn_step.py --device cuda --L 784 --batch 128 --hidden $h \
    --reps 15 --max-seconds 120 --variants eager,tc_cell,torchc,persistent \
    --out "$OUT/rnn_step_cuda_h${h}_persistent.json" 2>&1 | grep -E '"(eager|tc_cell|torchc|persistent)"|torchc_x|scan_fallback|Error|error' | head -30
done
