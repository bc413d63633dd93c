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
