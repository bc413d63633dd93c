#!/usr/bin/env bash
# The TuneGpu tests with the tuning phases, the rest of test_gpu, compare_torch on the two
# programs not timed since session 23. ~500 s. Logs under $OUT.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call2 TILEFUSE_TEST_BINARY="$BIN/tilefuse"
if [[ ! -e /work/main/tests ]]; then mkdir -p /work && ln -sfn "$PWD" /work/main; fi
timeout 200 "$BIN/test_gpu" --gtest_filter='TuneGpu.*' > "$OUT/tunegpu.txt" 2>&1
echo "rc $?" >> "$OUT/tunegpu.txt"
timeout 200 "$BIN/test_gpu" --gtest_filter='-TuneGpu.*' > "$OUT/test_gpu.txt" 2>&1
echo "rc $?" >> "$OUT/test_gpu.txt"
timeout 300 python3 bench/compare_torch.py --no-compile --tilefuse "$BIN/tilefuse" \
  bench/programs/gemm_bf16_8192.tfs bench/programs/moe_up_proj_bf16.tfs \
  > "$OUT/compare_torch.txt" 2>&1
echo "rc $?" >> "$OUT/compare_torch.txt"
