#!/usr/bin/env bash
# Session 44, call 1: (1) on the GPU, the two session-43 fixes that reach the CUDA path: integer
# comparisons with a number outside the tensor's dtype (call36/*.tfs, `run --device cuda --check`
# against the f64 reference, which wraps the number as PyTorch does) and a dead gather's index
# check (GpuUnreadIndex), with GpuCases; (2) call35.sh (wgrate, split and lag variants).
# Carry [".devcarry/bin", ".devcarry/wg1"]. Logs: $OUT/call36.tgz and call35's $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call36; rm -rf "$L"; mkdir -p "$L"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call36
for p in bench/device-plans/call36/*.tfs; do
  timeout 120 "$BIN/tilefuse" run "$p" --device cuda --check -v > "$L/$(basename "$p" .tfs).txt" 2>&1
  echo "rc $? $p: $(grep -c ' ok$' "$L/$(basename "$p" .tfs).txt") ok, $(grep -c 'check:' "$L/$(basename "$p" .tfs).txt") checks" | tee -a "$L/summary.txt"
done
timeout 300 "$BIN/test_gpu" --gtest_filter='GpuUnreadIndex.*:GpuCases.*' > "$L/test_gpu.txt" 2>&1
echo "rc $? test_gpu: $(grep -E '^\[  (PASSED|FAILED) ' "$L/test_gpu.txt" | tr '\n' ' ')" | tee -a "$L/summary.txt"
tar czf "$OUT/call36.tgz" -C "$L" .
ROUNDS="${ROUNDS:-2}" bash bench/device-plans/call35.sh
# (3) ping-pong (two one-warpgroup teams of 128x128, session 9's arrangement) at gather_heavy and
# the seed against the tuned cooperative kernel, in alternation, with the cuBLASLt row last.
L3=/tmp/call36pp; rm -rf "$L3"; mkdir -p "$L3"
for r in 1 2; do
  for c in 128x256x64/4/8/persistent/ra256 128x128x64/4/4/pingpong 128x128x64/5/4/pingpong 128x128x32/8/4/pingpong; do
    timeout 120 "$BIN/tilefuse" bench bench/programs/gather_heavy_bf16.tfs --no-check --no-baselines \
      --gemm-config "$c" --repeats 400 2>&1 | awk -v t="gh $c" '$1=="fused"{print t, $2, $3}' | tee -a "$L3/times.txt"
  done
done
timeout 120 "$BIN/tilefuse" bench bench/programs/gather_heavy_bf16.tfs --no-check --gemm-config 128x128x64/4/4/pingpong \
  --repeats 400 > "$L3/gh_baselines.txt" 2>&1; grep -E "^(fused|cuBLASLt)" "$L3/gh_baselines.txt" | tee -a "$L3/times.txt"
tar czf "$OUT/call36pp.tgz" -C "$L3" .
