#!/usr/bin/env bash
# Session 38: where register_a's first tile waits. The block timeline (call 23) put the first stage
# of gather_heavy's persistent /ra256 kernel at 4.5 µs after the block's start, against 2.7 for
# the plain kernel on the materialized rows and 2.6 / 2.5 for the seed's cp.async kernel and the
# plain gemm_f16. Timelines (`--cuda-option block_timeline=1`, bench --no-baselines) of gather_heavy
# and the seed in every arrangement of the gathered operand: register_a or cp.async, persistent
# or not; then (GTESTS) the GPU tests of bench and of the rows' shared inputs. About 150 s.
# Carry [".devcarry/bin"]. Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call24; mkdir -p "$L"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call24
export TILEFUSE_TEST_BINARY="$PWD/$BIN/tilefuse"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
P=bench/programs
T() { # program config [cuda options...]
  local p=$1 c=$2; shift 2
  local tag="$p $c $*"
  local f="$L/tl_$(echo "$tag" | tr ' /=' '___').txt"
  timeout 60 "$BIN/tilefuse" bench "$P/$p.tfs" --no-check --no-baselines --gemm-config "$c" \
    --cuda-option block_timeline=1 --repeats 200 "$@" > "$f" 2>&1
  echo "== $tag"; grep -E "^fused|timeline fused" "$f" | sed 's/^ *//' | cut -c1-330
}
for round in 1 2; do
  T gather_heavy_bf16 128x256x64/4/8/persistent/ra256
  T gather_heavy_bf16 128x256x64/4/8/persistent/ra
  T gather_heavy_bf16 128x256x64/4/8/persistent
  T gather_heavy_bf16 128x256x64/4/8/ra256
  T gather_heavy_bf16 128x256x64/4/8
  T seed_gather_mm_f16 128x256x64/4/8/ra256
  T seed_gather_mm_f16 128x256x64/4/8
  T gemm_f16 128x256x64/4/8
  pack
done
if [[ -n "${GTESTS:-}" ]]; then
  timeout 200 "$BIN/test_gpu" --gtest_filter="$GTESTS" > "$L/tests.txt" 2>&1
  echo "tests rc $?" | tee -a "$L/checks.txt"; grep -E "PASSED|FAILED|SKIPPED|^\[ +(OK|FAILED) " "$L/tests.txt" | tee -a "$L/checks.txt"
  pack
fi
