#!/usr/bin/env bash
# Session 40, after call28 (every form of the next tile's row prefetch 10-17% slower on an H100):
# is it the TMA unit (cp.async.bulk.prefetch shares it with B's boxes) or the prefetched bytes?
# ntp/mkntp.py's prod (one bulk prefetch of the whole row), prodl2 (the same rows by
# prefetch.global.L2 a 128-byte line, the LSU path) and prodk4 (a bulk prefetch of the row's first
# 512 bytes only), against the emitted kernel, on gather_heavy and moe_up_proj: run --check of
# each (gather_heavy), then two interleaved rounds of bench --no-baselines. About 150 s.
# Carry [".devcarry/bin"]. Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
ROUNDS="${ROUNDS:-2}"
L=/tmp/call29; P=/tmp/ntp29; rm -rf "$L" "$P"; mkdir -p "$L" "$P"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call29
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
C=128x256x64/4/8/persistent/ra256
declare -A PROG=([gh]=bench/programs/gather_heavy_bf16.tfs [moe]=bench/programs/moe_up_proj_bf16.tfs)
VARS="prod prodl2 prodk4"
for p in gh moe; do
  "$BIN/tilefuse" emit "${PROG[$p]}" --stage cuda --target sm_90a --plan fused --gemm-config "$C" \
    > "$P/$p.cu" 2>> "$L/emit.txt"
  for v in $VARS; do
    mkdir -p "$P/${p}_$v"
    python3 bench/device-plans/ntp/mkntp.py "$P/$p.cu" "$P/${p}_$v/gemm0.cu" "$v" >> "$L/emit.txt" 2>&1
  done
done
cp -r "$P" "$L/sources"
for v in $VARS; do
  TILEFUSE_OVERRIDE_SOURCE="$P/gh_$v" timeout 60 "$BIN/tilefuse" run "${PROG[gh]}" --device cuda \
    --plan fused --gemm-config "$C" --check -v > "$L/check_gh_$v.txt" 2>&1
  echo "rc $? gh $v: $(grep -E 'check:' "$L/check_gh_$v.txt" | tail -1)" | tee -a "$L/checks.txt"
done
pack
B() { # program variant repeats
  local over=(); [[ $2 != base ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$P/${1}_$2")
  timeout 120 "${over[@]}" "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines \
    --gemm-config "$C" --repeats "$3" 2>&1 | awk -v t="$1 $2" '$1=="fused"{print t, $2, $3}'
}
declare -A REPS=([gh]=400 [moe]=30)
for r in $(seq "$ROUNDS"); do
  for p in gh moe; do
    for v in base $VARS; do B "$p" "$v" "${REPS[$p]}" | tee -a "$L/times.txt"; done
  done
  pack
done
