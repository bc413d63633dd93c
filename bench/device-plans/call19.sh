#!/usr/bin/env bash
# Session 37: the tuner's plan runoff (the plans' winners timed again in alternation,
# cuda::time_interleaved_on_device). (1) DeviceTiming.* (the interleaved timer) and TuneGpu.*;
# (2) moe_up_proj, the 8192^3 GEMM and the seed tuned from an empty cache (`tilefuse tune`),
# each then benched (`--no-check`, with baselines). About 250 s. Carry [".devcarry/bin"].
# Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call19; mkdir -p "$L"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call19
export TILEFUSE_TEST_BINARY="$PWD/$BIN/tilefuse"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
timeout 60 "$BIN/test_runtime" --gtest_filter='DeviceTiming.*:HostTiming.*' > "$L/timing.txt" 2>&1
echo "timing tests rc $?" | tee -a "$L/checks.txt"; grep -E "alternation|PASSED|FAILED" "$L/timing.txt" | tee -a "$L/checks.txt"
timeout 200 "$BIN/test_gpu" --gtest_filter='TuneGpu.*' > "$L/tune_gpu.txt" 2>&1
echo "TuneGpu rc $?" | tee -a "$L/checks.txt"; grep -E "cold tuning|PASSED|FAILED" "$L/tune_gpu.txt" | tee -a "$L/checks.txt"
pack
for p in moe_up_proj_bf16 gemm_bf16_8192 seed_gather_mm_f16; do
  timeout 200 "$BIN/tilefuse" tune "bench/programs/$p.tfs" > "$L/tune_$p.txt" 2>&1
  echo "$p tune rc $?: $(tail -1 "$L/tune_$p.txt")" | tee -a "$L/checks.txt"
  timeout 120 "$BIN/tilefuse" bench "bench/programs/$p.tfs" --no-check > "$L/bench_$p.txt" 2>&1
  grep -E "^(fused|unfused|chosen|cuBLASLt)" "$L/bench_$p.txt" | tee -a "$L/checks.txt"
  pack
done
