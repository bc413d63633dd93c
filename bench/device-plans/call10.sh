#!/usr/bin/env bash
# Session 36: BLOCK_N 192 (wgmma m64n192; three 64-column strips of B a warpgroup). (1) run
# --check at 128x192 on gather_heavy and the seed, plain, persistent and /ra256; (2) two
# interleaved rounds of bench --no-baselines at 128x192 against the tuned 128x256 configs on
# gather_heavy, moe_up_proj and the 8192^3 GEMM (fused and unfused rows: the unfused one is the
# plain loop on the materialized rows), then the cuBLASLt rows once; (3) GpuWarpSpecialized*
# (every variant, with 128x192x64/4/8 in ws_configs). About 450 s. Carry [".devcarry/bin"].
# Logs: $OUT/logs.tgz after every step.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call10; mkdir -p "$L"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call10 TILEFUSE_TEST_BINARY="$BIN/tilefuse"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
declare -A PROG=([gh]=bench/programs/gather_heavy_bf16.tfs [moe]=bench/programs/moe_up_proj_bf16.tfs
                 [g8k]=bench/programs/gemm_bf16_8192.tfs [seed]=bench/programs/seed_gather_mm_f16.tfs)
for p in gh seed; do
  for c in 128x192x64/4/8 128x192x64/4/8/persistent 128x192x64/4/8/persistent/ra256; do
    timeout 60 "$BIN/tilefuse" run "${PROG[$p]}" --device cuda --plan fused --gemm-config "$c" \
      --check > "$L/check.txt" 2>&1
    echo "$p $c rc $? $(grep -E 'check:' "$L/check.txt" | tr '\n' ' ')" | tee -a "$L/checks.txt"
  done
done
pack
B() { # program config repeats
  timeout 90 "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines --gemm-config "$2" \
    --repeats "$3" 2>&1 | awk -v t="$1 $2" '$1=="fused"||$1=="unfused"{print t, $1, $2, $3}'
}
GH="128x256x64/4/8/persistent/ra256 128x192x64/4/8/persistent/ra256 128x192x64/5/8/persistent/ra256 128x192x64/4/8/persistent"
MOE="128x256x64/4/8/persistent/ra256 128x192x64/4/8/persistent/ra256 128x256x64/3/8/persistent 128x192x64/4/8/persistent"
G8K="128x256x64/3/8/persistent 128x192x64/4/8/persistent 128x192x64/3/8/persistent"
for r in 1 2; do
  for c in $GH; do B gh "$c" 200 | tee -a "$L/times.txt"; done; pack
  for c in $MOE; do B moe "$c" 30 | tee -a "$L/times.txt"; done; pack
  for c in $G8K; do B g8k "$c" 30 | tee -a "$L/times.txt"; done; pack
done
for p in gh moe g8k; do
  timeout 90 "$BIN/tilefuse" bench "${PROG[$p]}" --no-check --gemm-config 128x192x64/4/8/persistent \
    --repeats 30 2>&1 | grep -E "^(fused|unfused|cuBLASLt)" | sed "s/^/$p /" | tee -a "$L/baselines.txt"
done
pack
timeout 300 "$BIN/test_gpu" --gtest_filter='GpuWarpSpecialized*' > "$L/ws.txt" 2>&1
echo "rc $?" >> "$L/ws.txt"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \] |^rc" "$L/ws.txt" | tail -12
pack
