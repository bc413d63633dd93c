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
mkdir -p "$OUT/seed"
L=/tmp/call9 PACK="$OUT/seed/logs8.tgz" bash bench/device-plans/seed_bound.sh
OUT="$OUT/speed" SPEED_PROGS="gather_heavy_bf16 seed_gather_mm_f16 moe_up_proj_bf16" COMPARE=0 \
  bash bench/device-plans/call6.sh speed
OUT="$OUT/c7" DS="${DS:-2 4}" ROUNDS="${ROUNDS:-1}" bash bench/device-plans/call7.sh
