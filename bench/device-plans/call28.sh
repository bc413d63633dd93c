#!/usr/bin/env bash
# Session 40: the next tile's gathered rows prefetched into L2 (bench/device-plans/ntp/mkntp.py,
# variants prod and prod1 of the emitted 128x256x64/4/8/persistent/ra256 kernel; mma, the MMA
# warps' own prefetch, and prodca, the index by 8-byte cp.async, at gather_heavy only: their
# SASS has 1-2 k-tiles of fragment lead, not 3).
# (1) run --check of each variant against the f64 oracle (gather_heavy, repeats: repeated rows).
# (2) Three interleaved rounds of bench --no-baselines (fused row) on gather_heavy, repeats and
# moe_up_proj, base and variants. (3) Each program's cuBLASLt row once, in the same call.
# About 300 s. Carry [".devcarry/bin"]. Logs: $OUT/logs.tgz. Shorter: ROUNDS=2.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
ROUNDS="${ROUNDS:-3}"
L=/tmp/call28; P=/tmp/ntp; rm -rf "$L" "$P"; mkdir -p "$L" "$P"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call28
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
C=128x256x64/4/8/persistent/ra256
declare -A PROG=([gh]=bench/programs/gather_heavy_bf16.tfs [moe]=bench/programs/moe_up_proj_bf16.tfs
                 [rep]=bench/programs/repeats_f16.tfs)
declare -A VARS=([gh]="prod prod1 mma prodca" [moe]="prod prod1" [rep]="prod prod1")
for p in gh moe rep; do
  "$BIN/tilefuse" emit "${PROG[$p]}" --stage cuda --target sm_90a --plan fused --gemm-config "$C" \
    > "$P/$p.cu" 2>> "$L/emit.txt"
  for v in ${VARS[$p]}; do
    mkdir -p "$P/${p}_$v"
    python3 bench/device-plans/ntp/mkntp.py "$P/$p.cu" "$P/${p}_$v/gemm0.cu" "$v" >> "$L/emit.txt" 2>&1
  done
done
cp -r "$P" "$L/sources"
for p in gh rep; do
  for v in ${VARS[$p]}; do
    TILEFUSE_OVERRIDE_SOURCE="$P/${p}_$v" timeout 60 "$BIN/tilefuse" run "${PROG[$p]}" --device cuda \
      --plan fused --gemm-config "$C" --check -v > "$L/check_${p}_$v.txt" 2>&1
    echo "rc $? $p $v: $(grep -E 'check:|max_rel|rel_err' "$L/check_${p}_$v.txt" | tail -1)" | tee -a "$L/checks.txt"
  done
done
pack
B() { # program variant repeats
  local over=(); [[ $2 != base ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$P/${1}_$2")
  timeout 120 "${over[@]}" "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines \
    --gemm-config "$C" --repeats "$3" 2>&1 | awk -v t="$1 $2" '$1=="fused"{print t, $2, $3}'
}
declare -A REPS=([gh]=400 [rep]=400 [moe]=30)
for r in $(seq "$ROUNDS"); do
  for p in gh rep moe; do
    for v in base ${VARS[$p]}; do B "$p" "$v" "${REPS[$p]}" | tee -a "$L/times.txt"; done
  done
  pack
done
for p in gh rep moe; do
  timeout 120 "$BIN/tilefuse" bench "${PROG[$p]}" --no-check --gemm-config "$C" --repeats "${REPS[$p]}" \
    > "$L/${p}_baselines.txt" 2>&1
  echo "$p: $(awk '$1=="fused"{print "fused", $2, $3} /^cuBLASLt GEMM only  /{print "cuBLASLt", $4, $5}' "$L/${p}_baselines.txt" | tr '\n' ' ')" \
    | tee -a "$L/times.txt"
done
pack
