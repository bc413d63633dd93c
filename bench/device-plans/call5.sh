#!/usr/bin/env bash
# Session 33's one short call (about 380 s of device time were left): the GPU check of what
# landed without one.
#  1. /ra256 (82ceecf, `.L2::256B` on register_a's fragment loads): `run --check` (f64 oracle) at
#     the configs the tuner tries, on the seed, gather_heavy and the example.
#  2. The host path merged from the branch host-ctx: `GpuHostPath.*`, the index check over an
#     index of 3+ dims (`GpuCases.AnIndexOfManyDims*`, the printer's 4-arg limit before 9435cdf),
#     register_a's out-of-range check, the edge programs under the two /ra256 variants
#     (GpuWarpSpecialized/*fragment_l2_prefetch*), then the torch CUDA tests on the library.
#  3. gather_heavy `/ra` against `/ra256` with the baselines, one bench each.
# Here, before the call: `scripts/setup.sh && scripts/gpu_check.sh --stage`.
# device tool: command "bash bench/device-plans/call5.sh", carry [".devcarry/bin"].
# Logs are packed into $OUT/logs.tgz after every step (a timeout keeps what ran).
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call5; rm -rf "$L"; mkdir -p "$L"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache TILEFUSE_TEST_BINARY="$BIN/tilefuse"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
# The test binaries read tests/cases under the path they were built in.
[[ -e /work/main/tests ]] || { mkdir -p /work && ln -sfn "$PWD" /work/main; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$L/gpu.txt"
cat "$L/gpu.txt"
for spec in "bench/programs/seed_gather_mm_f16.tfs 128x256x64/3/8/ra256" \
            "bench/programs/gather_heavy_bf16.tfs 128x256x64/4/8/persistent/ra256" \
            "bench/programs/gather_heavy_bf16.tfs 128x256x64/3/8/persistent/ra256" \
            "examples/gather_mm.tfs 128x128x64/4/8/ra256"; do
  read -r prog cfg <<< "$spec"
  timeout 60 "$BIN/tilefuse" run "$prog" --device cuda --plan fused --gemm-config "$cfg" \
    --check -v >> "$L/ra256.txt" 2>&1
  echo "rc $? $spec" | tee -a "$L/ra256.txt"
done
pack
timeout 130 "$BIN/test_gpu" \
  --gtest_filter='GpuHostPath.*:GpuCases.AnIndexOfManyDims*:GpuCases.OutOfRangeUnderRegisterA*:GpuWarpSpecialized/*fragment_l2_prefetch*' \
  > "$L/test_gpu.txt" 2>&1
echo "rc $?" >> "$L/test_gpu.txt"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^rc" "$L/test_gpu.txt" | tail -12
pack
TILEFUSE_LIBRARY="$BIN/libtilefuse.so" TILEFUSE_CLI="$BIN/tilefuse" PYTHONPATH=python \
  timeout 60 python3 python/tests/run.py test_torch_cuda.py > "$L/python.txt" 2>&1
echo "rc $?" >> "$L/python.txt"; grep -E "overhead|passed|failed|^rc" "$L/python.txt" | tail -5
pack
for c in ra ra256; do
  timeout 40 "$BIN/tilefuse" bench bench/programs/gather_heavy_bf16.tfs --no-check \
    --repeats 200 --gemm-config "128x256x64/4/8/persistent/$c" > "$L/bench_$c.txt" 2>&1
  echo "rc $?" >> "$L/bench_$c.txt"; grep -A5 "^plan" "$L/bench_$c.txt"
  pack
done
