#!/usr/bin/env bash
# Session 39: the block timeline kept in a 32-byte shared-memory slot (LaunchPlan::timeline_slot)
# instead of registers. (1) Its GPU test, and two of session 38's tests that ran on no GPU since
# their last change (GpuCases.AFailedBindLeavesNothingToLaunch, TuneGpu.*). (2) Does it still
# move register_a's kernel? gather_heavy's tuned /persistent/ra256 kernel, and the seed's and
# gemm_f16's one-wave kernels, with and without the timeline, in three interleaved rounds of
# bench (fused and unfused rows, 400 repeats; gather_heavy's unfused row runs the plain persistent
# kernel on the materialized rows); the phases of every kernel from the rounds with it. About 200 s.
# Carry [".devcarry/bin"]. Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call27; mkdir -p "$L"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call27
export TILEFUSE_TEST_BINARY="$PWD/$BIN/tilefuse"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
P=bench/programs
# 1. Correct.
timeout 240 "$BIN/test_gpu" \
  --gtest_filter="${GTESTS:-GpuBlockTimeline.*:GpuCases.AFailedBindLeavesNothingToLaunch:TuneGpu.*}" \
  > "$L/tests.txt" 2>&1
echo "tests rc $?" | tee -a "$L/checks.txt"
grep -E "PASSED|FAILED|SKIPPED|^\[ +(OK|FAILED) " "$L/tests.txt" | tee -a "$L/checks.txt"
for c in 128x256x64/4/8/persistent/ra256 128x256x64/4/8; do
  timeout 60 "$BIN/tilefuse" run "$P/gather_heavy_bf16.tfs" --check --gemm-config "$c" \
    --cuda-option block_timeline=1 > "$L/check_${c//\//_}.txt" 2>&1
  echo "gather_heavy $c timeline: rc $? $(tail -1 "$L/check_${c//\//_}.txt")" | tee -a "$L/checks.txt"
done
pack
# 2. With and without the timeline, interleaved.
T() { # round program config on|off
  local f="$L/r$1_$2_${3//\//_}_$4.txt" opt=()
  [[ $4 == on ]] && opt=(--cuda-option block_timeline=1)
  timeout 60 "$BIN/tilefuse" bench "$P/$2.tfs" --no-check --no-baselines --gemm-config "$3" \
    --repeats 400 "${opt[@]}" > "$f" 2>&1
  echo "r$1 $2 $3 timeline=$4: $(awk '$1=="fused"||$1=="unfused"{printf "%s %s %s  ", $1, $2, $3}' "$f")" \
    | tee -a "$L/times.txt"
  [[ $4 == on ]] && grep -E "timeline " "$f" | sed 's/^ *//' | cut -c1-400 | tee -a "$L/phases.txt"
}
for round in 1 2 3; do
  for on in off on; do
    T "$round" gather_heavy_bf16 128x256x64/4/8/persistent/ra256 "$on"
    T "$round" gather_heavy_bf16 128x256x64/4/8/persistent "$on"
    T "$round" seed_gather_mm_f16 128x256x64/4/8 "$on"
    T "$round" gemm_f16 128x256x64/4/8 "$on"
  done
  pack
done
