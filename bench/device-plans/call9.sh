#!/usr/bin/env bash
# Session 35's first call, for a session where starts are scarce: the one call that answers both
# questions open since session 33, most needed first (each step packs its logs, so a call cut
# short keeps what ran). (1) the seed's index-latency bound (call8's middle step: the emitted
# /ra256 seed kernel against a copy whose fragment rows skip the index; --no-check); (2)
# gather_heavy, the seed and moe_up_proj tuned from an empty cache with /ra256 in the space, then
# bench with baselines (call6.sh speed, no repeats, no compare_torch); (3) the producer's L2
# prefetch at D = 2 and 4, one round (call7.sh, short form). About 500 s. Carry [".devcarry/bin"].
# Logs: $OUT/seed/logs8.tgz, $OUT/c7/logs.tgz, $OUT/speed/logs.tgz.
set -uo pipefail
OUT="${OUT:-/tmp/out}"
BIN="${TF_BIN:-.devcarry/bin}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
L=/tmp/call9; mkdir -p "$L/noidx" "$OUT/seed"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call9
S=bench/programs/seed_gather_mm_f16.tfs C=128x256x64/3/8/ra256
"$BIN/tilefuse" emit "$S" --stage cuda --target sm_90a --plan fused --gemm-config "$C" > "$L/seed.cu"
python3 bench/device-plans/noidx.py "$L/seed.cu" "$L/noidx/gemm0.cu"
for r in 1 2; do
  for v in base noidx; do
    over=(); [[ $v != base ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$L/noidx")
    timeout 60 "${over[@]}" "$BIN/tilefuse" bench "$S" --no-check --gemm-config "$C" --repeats 200 \
      2>&1 | awk -v t="seed $v" '$1=="fused"||$1=="cuBLASLt"{print t, $1, $2, $3}' | tee -a "$L/seed_times.txt"
  done
  tar czf "$OUT/seed/logs8.tgz" -C "$L" .
done
OUT="$OUT/speed" SPEED_PROGS="gather_heavy_bf16 seed_gather_mm_f16 moe_up_proj_bf16" COMPARE=0 \
  bash bench/device-plans/call6.sh speed
OUT="$OUT/c7" DS="${DS:-2 4}" ROUNDS="${ROUNDS:-1}" bash bench/device-plans/call7.sh
