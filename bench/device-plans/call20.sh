#!/usr/bin/env bash
# Session 37: bench with its rows timed in alternation (time_interleaved_on_device), so that the
# issue's ratios (fused over the cuBLASLt GEMM row, the same call) are taken in one power state.
# (1) The GPU tests that run bench or the block timeline (TuneGpu.Bench*, GpuBlockTimeline.*,
# GpuTf32.CublasLtBaselineFollowsTheFlag); (2) issue 15's programs tuned from an empty cache
# (`tilefuse tune`, with the plan runoff) and benched with baselines, most important first.
# About 300 s. Carry [".devcarry/bin"]. Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call20; mkdir -p "$L"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR="${TILEFUSE_CACHE_DIR:-/tmp/tf-cache-call20}"
export TILEFUSE_TEST_BINARY="$PWD/$BIN/tilefuse"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
if [[ "${TESTS:-1}" == 1 ]]; then
  timeout 150 "$BIN/test_gpu" --gtest_filter='TuneGpu.Bench*:GpuBlockTimeline.*:GpuTf32.CublasLtBaselineFollowsTheFlag' \
    > "$L/tests.txt" 2>&1
  echo "tests rc $?" | tee -a "$L/checks.txt"; grep -E "PASSED|FAILED" "$L/tests.txt" | tee -a "$L/checks.txt"
fi
pack
for p in ${PROGS:-moe_up_proj_bf16 gather_heavy_bf16 seed_gather_mm_f16 gemm_bf16_8192 repeats_f16 gemm_f16}; do
  timeout 200 "$BIN/tilefuse" tune "bench/programs/$p.tfs" > "$L/tune_$p.txt" 2>&1
  echo "$p tune rc $?: $(tail -1 "$L/tune_$p.txt")" | tee -a "$L/checks.txt"
  timeout 120 "$BIN/tilefuse" bench "bench/programs/$p.tfs" --no-check > "$L/bench_$p.txt" 2>&1
  grep -E "^(fused|unfused|chosen|cuBLASLt)" "$L/bench_$p.txt" | grep -v ":" | tee -a "$L/checks.txt"
  pack
done
