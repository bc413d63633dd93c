#!/usr/bin/env bash
# Session 38: register_a's fragment loads as 4-byte words straight into the wgmma operand
# registers (bench/device-plans/words/mkwords.py), so that the epilogue no longer waits on the
# copies of the next tile's last-issued k-tile. The emitted persistent /ra256 kernels of
# gather_heavy and moe_up_proj against their `last2` (the next tile's k-tiles 1-2 as words) and
# `all` (every fragment load as words) variants, by kernel override: `run --check` of each
# gather_heavy variant, then ROUNDS interleaved rounds of bench (--no-baselines), then
# gather_heavy's baselines once. About 250 s. Carry [".devcarry/bin"]. Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
ROUNDS="${ROUNDS:-3}"; VS="${VS:-last2 all}"
L=/tmp/call21; P=/tmp/words; rm -rf "$L" "$P"; mkdir -p "$L" "$P"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call21
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$L/gpu.txt"
cat "$L/gpu.txt"
C=128x256x64/4/8/persistent/ra256
declare -A PROG=([gh]=bench/programs/gather_heavy_bf16.tfs [moe]=bench/programs/moe_up_proj_bf16.tfs)
for p in gh moe; do
  "$BIN/tilefuse" emit "${PROG[$p]}" --stage cuda --target sm_90a --plan fused --gemm-config "$C" > "$P/$p.cu" 2>> "$L/emit.txt"
  for v in $VS; do
    mkdir -p "$P/${p}_$v"
    python3 bench/device-plans/words/mkwords.py "$P/$p.cu" "$P/${p}_$v/gemm0.cu" "$v" >> "$L/emit.txt" 2>&1
  done
done
cp -r "$P" "$L/sources"
for v in $VS; do
  TILEFUSE_OVERRIDE_SOURCE="$P/gh_$v" timeout 60 "$BIN/tilefuse" run "${PROG[gh]}" --device cuda \
    --plan fused --gemm-config "$C" --check -v > "$L/check_gh_$v.txt" 2>&1
  echo "rc $? $v" | tee -a "$L/check_gh_$v.txt"; grep -E "check:|local" "$L/check_gh_$v.txt"
done
pack
B() { # program variant repeats
  local over=(); [[ $2 != base ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$P/${1}_$2")
  timeout 90 "${over[@]}" "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines \
    --gemm-config "$C" --repeats "$3" 2>&1 | awk -v t="$1 $2" '$1=="fused"{print t, $2, $3}'
}
for r in $(seq "$ROUNDS"); do
  for v in base $VS; do B gh $v 400 | tee -a "$L/times.txt"; done
  pack
done
for r in $(seq "$ROUNDS"); do
  for v in base $VS; do B moe $v 30 | tee -a "$L/times.txt"; done
  pack
done
timeout 60 "$BIN/tilefuse" bench "${PROG[gh]}" --no-check --gemm-config "$C" --repeats 400 \
  > "$L/gh_baselines.txt" 2>&1
grep -E "^(fused|cuBLASLt)" "$L/gh_baselines.txt"; pack
