#!/usr/bin/env bash
# The next session's full round (three calls, each under 10 minutes), for main as of session 33:
# nothing since session 31 has run the whole test_gpu on one build, and the tuner has never
# chosen with `/ra256` (82ceecf) in its space.
#   bash bench/device-plans/call6.sh tests   # test_gpu whole (GpuWarpSpecialized split by
#                                            # variant; about 400 s), the torch CUDA tests
#   bash bench/device-plans/call6.sh cases   # the shared cases and the symbolic program on
#                                            # the GPU, both plans, --check; memcheck on
#                                            # GpuHostPath.* (failed there in session 32)
#   bash bench/device-plans/call6.sh speed   # the seed, gather_heavy, repeats and moe_up_proj
#                                            # tuned from an empty cache (which config wins,
#                                            # /ra256 or not), bench with baselines, then
#                                            # compare_torch --no-compile on the same four
#                                            # (SPEED_PROGS: other bench/programs names;
#                                            # COMPARE=0: no compare_torch)
# Here, before the calls: `scripts/setup.sh && scripts/gpu_check.sh --stage`; carry
# [".devcarry/bin"]. Logs are packed into $OUT/logs.tgz after every step.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call6; mkdir -p "$L"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call6 TILEFUSE_TEST_BINARY="$BIN/tilefuse"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
[[ -e /work/main/tests ]] || { mkdir -p /work && ln -sfn "$PWD" /work/main; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$L/gpu.txt"
cat "$L/gpu.txt"
summary() { grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \] |^rc" "$1" | tail -20; }
case "${1:-}" in
  tests)
    timeout 480 "$BIN/test_gpu" > "$L/test_gpu.txt" 2>&1
    echo "rc $?" >> "$L/test_gpu.txt"; summary "$L/test_gpu.txt"; pack
    TILEFUSE_LIBRARY="$BIN/libtilefuse.so" TILEFUSE_CLI="$BIN/tilefuse" PYTHONPATH=python \
      timeout 60 python3 python/tests/run.py test_torch_cuda.py > "$L/python.txt" 2>&1
    echo "rc $?" >> "$L/python.txt"; grep -E "passed|failed|^rc" "$L/python.txt" | tail -3
    pack
    ;;
  cases)
    TF_BIN="$BIN" TF_LOG="$L/gpu_check" timeout 300 scripts/gpu_check.sh cases \
      > "$L/cases.txt" 2>&1
    echo "rc $?" >> "$L/cases.txt"; tail -8 "$L/cases.txt"; pack
    timeout 200 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
      "$BIN/test_gpu" --gtest_filter='GpuHostPath.*' > "$L/memcheck_host.txt" 2>&1
    echo "rc $?" >> "$L/memcheck_host.txt"; grep -E "ERROR SUMMARY|FAILED|^rc" "$L/memcheck_host.txt"
    pack
    ;;
  speed)
    for b in ${SPEED_PROGS:-seed_gather_mm_f16 gather_heavy_bf16 repeats_f16 moe_up_proj_bf16}; do
      f=bench/programs/$b.tfs
      [[ -f $f ]] || { echo "no $f"; continue; }
      timeout 150 "$BIN/tilefuse" tune "$f" > "$L/tune_$b.txt" 2>&1
      echo "rc $?" >> "$L/tune_$b.txt"; tail -2 "$L/tune_$b.txt"
      timeout 60 "$BIN/tilefuse" bench "$f" --no-check > "$L/bench_$b.txt" 2>&1
      echo "rc $?" >> "$L/bench_$b.txt"; grep -E "^(fused|unfused|cuBLASLt|chosen)" "$L/bench_$b.txt"
      pack
    done
    [[ ${COMPARE:-1} == 0 ]] && exit 0
    timeout 240 python3 bench/compare_torch.py --no-compile --tilefuse "$BIN/tilefuse" \
      bench/programs/seed_gather_mm_f16.tfs bench/programs/gather_heavy_bf16.tfs \
      bench/programs/repeats_f16.tfs bench/programs/moe_up_proj_bf16.tfs \
      > "$L/compare_torch.txt" 2>&1
    echo "rc $?" >> "$L/compare_torch.txt"; tail -14 "$L/compare_torch.txt"; pack
    ;;
  *) echo "usage: call6.sh tests|cases|speed" >&2; exit 2 ;;
esac
