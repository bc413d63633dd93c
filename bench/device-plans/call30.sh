#!/usr/bin/env bash
# Session 41: the second MMA warpgroup L k-tiles behind the first (bench/device-plans/lag/mklag.py,
# a hand-written override of each emitted kernel), so that one warpgroup's epilogue overlaps the
# other's wgmma. (1) run --check of each variant against the f64 oracle. (2) ROUNDS interleaved
# rounds of bench --no-baselines (fused row). (3) Each program's cuBLASLt row once, same call.
# About 250 s. Carry [".devcarry/bin"]. Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
ROUNDS="${ROUNDS:-2}"
L=/tmp/call30; P=/tmp/lag; rm -rf "$L" "$P"; mkdir -p "$L" "$P"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call30
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
declare -A PROG=([gh]=bench/programs/gather_heavy_bf16.tfs [seed]=bench/programs/seed_gather_mm_f16.tfs
                 [g16]=bench/programs/gemm_f16.tfs [rep]=bench/programs/repeats_f16.tfs
                 [moe]=bench/programs/moe_up_proj_bf16.tfs)
declare -A CONF=([gh]=128x256x64/4/8/persistent/ra256 [seed]=128x256x64/4/8/ra256
                 [g16]=128x256x32/8/8 [rep]=128x256x64/4/8/persistent/ra
                 [moe]=128x256x64/4/8/persistent/ra256)
declare -A VARS=([gh]="1 2 3" [seed]="1 2 3" [g16]="2 4 6" [rep]="1 2" [moe]="1 2")
declare -A REPS=([gh]=400 [seed]=400 [g16]=400 [rep]=400 [moe]=30)
ORDER="${ORDER:-gh seed g16 rep moe}"
for p in $ORDER; do
  "$BIN/tilefuse" emit "${PROG[$p]}" --stage cuda --target sm_90a --plan fused --gemm-config "${CONF[$p]}" \
    > "$P/$p.cu" 2>> "$L/emit.txt"
  for v in ${VARS[$p]}; do
    mkdir -p "$P/${p}_$v"
    python3 bench/device-plans/lag/mklag.py "$P/$p.cu" "$P/${p}_$v/gemm0.cu" "$v" >> "$L/emit.txt" 2>&1
  done
done
cp -r "$P" "$L/sources"
for p in $ORDER; do
  [[ $p == moe ]] && continue
  for v in ${VARS[$p]}; do
    TILEFUSE_OVERRIDE_SOURCE="$P/${p}_$v" timeout 60 "$BIN/tilefuse" run "${PROG[$p]}" --device cuda \
      --plan fused --gemm-config "${CONF[$p]}" --check -v > "$L/check_${p}_$v.txt" 2>&1
    echo "rc $? $p $v: $(grep -E 'check:|max_rel|rel_err' "$L/check_${p}_$v.txt" | tail -1)" | tee -a "$L/checks.txt"
  done
done
pack
B() { # program variant
  local over=(); [[ $2 != 0 ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$P/${1}_$2")
  timeout 120 "${over[@]}" "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines \
    --gemm-config "${CONF[$1]}" --repeats "${REPS[$1]}" 2>&1 | awk -v t="$1 L$2" '$1=="fused"{print t, $2, $3}'
}
for r in $(seq "$ROUNDS"); do
  for p in $ORDER; do
    for v in 0 ${VARS[$p]}; do B "$p" "$v" | tee -a "$L/times.txt"; done
  done
  pack
done
for p in $ORDER; do
  timeout 120 "$BIN/tilefuse" bench "${PROG[$p]}" --no-check --gemm-config "${CONF[$p]}" --repeats "${REPS[$p]}" \
    > "$L/${p}_baselines.txt" 2>&1
  echo "$p: $(awk '$1=="fused"{print "fused", $2, $3} /^cuBLASLt GEMM only  /{print "cuBLASLt", $4, $5}' "$L/${p}_baselines.txt" | tr '\n' ' ')" \
    | tee -a "$L/times.txt"
done
pack
