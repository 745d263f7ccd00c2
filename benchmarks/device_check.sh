#!/bin/bash
# One device call (GPU machine: Python 3.12, torch 2.11): build, the whole pytest suite
# (GPU tests included), and the given benchmarks; logs under $OUT.
#   run: carry [".gpu"], command "bash benchmarks/device_check.sh [tests] [gputests] [tfexplain] [models]
#        [bench|benchq] [profile] [ktimes] [sync] [dyn] [overhead]" (modes run in the order given)
#   gputests: every test file with a CUDA test (tests/test_gpu*.py and the others that skip their
#   CUDA cases without a device, listed here; a file that no longer exists is left out with a
#   note instead of making pytest stop before it ran anything)
set -u
export PYTHONPATH=$PWD TORCHC_BUILD_JOBS=16 LLVM_INCLUDE=.gpu/include \
       LLVM_LIB=/lib/x86_64-linux-gnu/libLLVM-16.so.1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 --version; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t0=$(date +%s)
python3 setup.py -q build_ext --inplace > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
for what in "$@"; do
  case $what in
    tests) timeout 400 python3 -m pytest -q -p no:cacheprovider tests > "$OUT/pytest.log" 2>&1
           echo "pytest rc=$?"; tail -5 "$OUT/pytest.log"; grep -E "^(FAILED|ERROR)" "$OUT/pytest.log" | head -20 ;;
    dyn) timeout 90 python3 benchmarks/dynamic_shapes.py --threads 16 --json "$OUT/dynamic_shapes_device.json" 2>&1 | tail -4 ;;
    sync) timeout 150 python3 benchmarks/sync_check.py --only ${SYNC_MODELS:-vit_b_16,resnet50,bert} 2>&1 | grep -v Warn | tail -30 ;;
    ktimes) timeout ${KTIMES_TIMEOUT:-120} python3 benchmarks/kernel_times.py ${KTIMES_ARGS:-} 2>&1 | grep -v Warn | tail -40 ;;
    overhead) timeout 120 python3 benchmarks/overhead.py 2>&1 | tail -8 ;;
    gputests) files=""
           for f in tests/test_gpu*.py tests/test_gemm_gpu.py tests/test_cudagraphs.py tests/test_dwconv.py \
                    tests/test_act_half.py tests/test_casts.py tests/test_memory_format.py tests/test_ops_edge.py \
                    tests/test_training_partition.py; do
             if [ -f "$f" ]; then files="$files $f"; else echo "gputests: $f missing, left out"; fi
           done
           timeout ${GPUTESTS_TIMEOUT:-300} python3 -m pytest -q -p no:cacheprovider $files ${GPUTESTS_K:+-k "$GPUTESTS_K"} > "$OUT/gputests.log" 2>&1
           echo "gpu pytest rc=$?"; tail -3 "$OUT/gputests.log"; grep -E "^(FAILED|ERROR|E  )" "$OUT/gputests.log" | head -20 ;;
    bench) timeout ${BENCH_TIMEOUT:-150} python3 benchmarks/gpu_bench.py ${BENCH_ARGS:-} --json "$OUT/gpu_bench_h200.json" > "$OUT/gpu_bench.log" 2>&1
           echo "gpu_bench rc=$?"; tail -30 "$OUT/gpu_bench.log" ;;
    benchq) timeout ${BENCH_TIMEOUT:-75} python3 benchmarks/gpu_bench.py --no-inductor ${BENCH_ARGS:-} --json "$OUT/gpu_bench_h200.json" > "$OUT/gpu_bench.log" 2>&1
           echo "gpu_bench rc=$?"; tail -22 "$OUT/gpu_bench.log" ;;
    profile) TORCHC_HOST_STATS=1 TORCHC_DEBUG=${PROFILE_DEBUG:-time} timeout 200 python3 benchmarks/profile_model.py --host --only ${PROFILE_MODELS:-resnet50,vit} --top 10 ${PROFILE_ARGS:-} > "$OUT/profile.log" 2>&1
           grep "torchc conv" "$OUT/profile.log" | sort | uniq -c | sort -rn | head -8; grep -E "^== |^-- |host ~|total |graphs |host call|gap " "$OUT/profile.log" | cut -c1-160 ;;
    tfexplain) timeout 120 python3 - <<'PY' 2>&1 | grep -v Warn
import collections, torch, transformers, torchc
for name in ["bert", "gpt2"]:
    m = (transformers.BertModel(transformers.BertConfig()) if name == "bert" else transformers.GPT2Model(transformers.GPT2Config())).cuda().to(torch.bfloat16).eval()
    ids = torch.randint(0, 30000, (2, 128), device="cuda")
    with torch.no_grad():
        torchc.reset()
        ex = torchc.explain(m)(ids)
    print(name, transformers.__version__, "graphs", ex.graph_count, "breaks", ex.graph_break_count)
    for r, n in collections.Counter(str(r)[:300] for r in ex.break_reasons).most_common(8):
        print(f"  {n:3d}x {r}")
PY
           ;;
    models) timeout ${MODELS_TIMEOUT:-330} python3 benchmarks/models.py --batch 32 ${MODELS_ARGS:-} --json "$OUT/models_gpu_h200.json" > "$OUT/models.log" 2>&1
            echo "models rc=$?"; tail -25 "$OUT/models.log" ;;
  esac
done
