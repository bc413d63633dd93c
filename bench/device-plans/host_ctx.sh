#!/usr/bin/env bash
# The branch host-ctx (helper-36/37 and session 31; not merged), kept as the patch series
# bench/device-plans/host-ctx/*.patch (branches do not outlive a session): the caller's current
# CUDA context put back after every Callable entry point, the legacy stream counted as capturing
# during another stream's capture, ~Callable waiting on its own completion event instead of
# cuCtxSynchronize (the host path: one record at destruction, none in the timed loop), every grid
# checked before any launch, the index check's report carrying the index's shape. Its first
# version failed 3 GPU tests (test bugs) and memcheck (an event recorded into a capture); patches
# 0006-0007 fix those and have never run on a GPU. Run this first, then decide the merge
# (`git am bench/device-plans/host-ctx/*.patch` on main, then delete the folder).
#
# Here, before the call (a full build: ~25 min on 2 cores; -j1 beside another build):
#   git -C /work/main worktree add /work/wt-host -b host-ctx main
#   cd /work/wt-host && git am bench/device-plans/host-ctx/*.patch && scripts/setup.sh
#   mkdir -p /work/main/.devcarry/bin-host && cp build/tilefuse build/libtilefuse.so \
#     build/tests/test_gpu /work/main/.devcarry/bin-host/
#   (and copy the branch's python/tests/test_torch_cuda.py over main's, uncommitted: the cuda:1 test)
# device tool: command "bash bench/device-plans/host_ctx.sh", carry [".devcarry/bin-host"]
# ~150 s. Logs under $OUT.
set -uo pipefail
B="${TF_BIN:-.devcarry/bin-host}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export TILEFUSE_TEST_BINARY="$B/tilefuse" TILEFUSE_CACHE_DIR=/tmp/tf-cache-host
# The test binaries read tests/cases under the path they were built in.
mkdir -p /work && ln -sfn "$PWD" /work/wt-host && ln -sfn "$PWD" /work/main 2>/dev/null
timeout 200 "$B/test_gpu" > "$OUT/test_gpu.txt" 2>&1; echo "rc $?" >> "$OUT/test_gpu.txt"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^rc" "$OUT/test_gpu.txt" | tail -15
TILEFUSE_LIBRARY="$B/libtilefuse.so" TILEFUSE_CLI="$B/tilefuse" PYTHONPATH=python \
  timeout 90 python3 python/tests/run.py test_torch_cuda.py > "$OUT/python.txt" 2>&1
echo "rc $?" >> "$OUT/python.txt"; grep -E "overhead|tilefuse_median|passed" "$OUT/python.txt"
timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$B/test_gpu" --gtest_filter='GpuHostPath.*' > "$OUT/memcheck.txt" 2>&1
echo "rc $?" >> "$OUT/memcheck.txt"; grep -E "ERROR SUMMARY|^rc" "$OUT/memcheck.txt"
