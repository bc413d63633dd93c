#!/usr/bin/env bash
# Session 30's code on the GPU, before any timing: every GPU test (the per-kernel status words,
# the device-side unread-index check, TuneGpu's plan margin), the CLI's unread-index check
# (unread.sh), the torch CUDA tests of the Python package, memcheck on the unread-index tests.
# ~250 s. Logs under $OUT.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call0 TILEFUSE_TEST_BINARY="$BIN/tilefuse"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
if [[ ! -e /work/main/tests ]]; then mkdir -p /work && ln -sfn "$PWD" /work/main; fi
timeout 60 bash bench/device-plans/unread.sh
timeout 240 "$BIN/test_gpu" > "$OUT/test_gpu.txt" 2>&1; echo "rc $?" >> "$OUT/test_gpu.txt"
grep -E "^\[  (PASSED|FAILED) |tests ran|^rc" "$OUT/test_gpu.txt" | tail -15
TILEFUSE_LIBRARY="$BIN/libtilefuse.so" TILEFUSE_CLI="$BIN/tilefuse" PYTHONPATH=python \
  timeout 120 python3 python/tests/run.py test_torch_cuda.py > "$OUT/python.txt" 2>&1
echo "rc $?" >> "$OUT/python.txt"; tail -3 "$OUT/python.txt"
timeout 120 "$CUDA_HOME/bin/compute-sanitizer" --tool memcheck --error-exitcode 9 \
  "$BIN/test_gpu" --gtest_filter='GpuUnreadIndex.*:GpuCases.ALater*' > "$OUT/memcheck.txt" 2>&1
echo "rc $?" >> "$OUT/memcheck.txt"; tail -3 "$OUT/memcheck.txt"
