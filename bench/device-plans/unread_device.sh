#!/usr/bin/env bash
# The device-side check of unread indices (branch unread-device) on the GPU: the GpuUnreadIndex
# tests of test_gpu (launch(DeviceCall) and the Callable: K or N of 0, x[i][0] @ w, x[i][0:1],
# i32, 2-D, strided, negative, index_select, a gather of a gather, the lowest position, no launch
# where every index is read, the per-call condition), the same under compute-sanitizer memcheck
# and racecheck, then the rest of test_gpu, then the torch CUDA test (a CUDA graph replaying the
# check) where torch is installed. ~2-4 min. Logs: $OUT/unread_device.txt.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
LOG="$OUT/unread_device.txt"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
nvidia-smi -L >> "$LOG" 2>&1
echo "== GpuUnreadIndex" >> "$LOG"
"$BIN/test_gpu" --gtest_filter='GpuUnreadIndex.*' >> "$LOG" 2>&1; echo "rc $?" >> "$LOG"
for tool in memcheck racecheck; do
  echo "== compute-sanitizer $tool" >> "$LOG"
  "$CUDA_HOME/bin/compute-sanitizer" --tool "$tool" --error-exitcode 9 \
    "$BIN/test_gpu" --gtest_filter='GpuUnreadIndex.*' >> "$LOG" 2>&1
  echo "rc $?" >> "$LOG"
done
echo "== the rest of test_gpu" >> "$LOG"
"$BIN/test_gpu" --gtest_filter='-GpuUnreadIndex.*' 2>&1 | tail -40 >> "$LOG"
echo "== python (torch CUDA)" >> "$LOG"
TILEFUSE_LIBRARY="$BIN/libtilefuse.so" TILEFUSE_CLI="$BIN/tilefuse" PYTHONPATH=python \
  python3 python/tests/run.py test_torch_cuda.py >> "$LOG" 2>&1
echo "rc $?" >> "$LOG"
tail -5 "$LOG"
