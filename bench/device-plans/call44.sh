#!/usr/bin/env bash
# Session 46: register_a's fragment loads without predicates (bench/device-plans/frag32/mkvar.py,
# kernel overrides of the emitted kernels): lf32zc (16 32-bit loads a k-tile straight into wgmma's
# register order, no copies), lf128zc (the 16-byte loads unpredicated; the copies stay), against
# the emitted kernel, on gather_heavy (/persistent/ra256), the seed (/ra256) and repeats
# (/persistent/ra). (1) run --check of each variant; (2) ROUNDS interleaved bench rounds (fused
# row); (3) the cuBLASLt rows. About 200 s. Carry [".devcarry/bin"]. Logs: $OUT/log.txt.
set -uo pipefail
BIN=.devcarry/bin; OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"; LOG="$OUT/log.txt"
P=/tmp/frag32; rm -rf "$P"; mkdir -p "$P"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call44
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$LOG"
declare -A PROG=([gh]=bench/programs/gather_heavy_bf16.tfs [seed]=bench/programs/seed_gather_mm_f16.tfs
                 [rep]=bench/programs/repeats_f16.tfs)
declare -A CONF=([gh]=128x256x64/4/8/persistent/ra256 [seed]=128x256x64/4/8/ra256
                 [rep]=128x256x64/4/8/persistent/ra)
VARS="${VARS:-lf32zc lf128zc}"; ORDER="${ORDER:-gh seed rep}"; ROUNDS="${ROUNDS:-3}"
for p in $ORDER; do
  "$BIN/tilefuse" emit "${PROG[$p]}" --stage cuda --target sm_90a --plan fused --gemm-config "${CONF[$p]}" > "$P/$p.cu"
  for v in $VARS; do
    mkdir -p "$P/${p}_$v"; python3 bench/device-plans/frag32/mkvar.py "$P/$p.cu" "$P/${p}_$v/gemm0.cu" "$v"
  done
done
cp -r "$P" "$OUT/sources"
chk() {
  local over=(); [[ $2 != base ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$P/${1}_$2")
  timeout 60 "${over[@]}" "$BIN/tilefuse" run "${PROG[$1]}" --device cuda --plan fused \
    --gemm-config "${CONF[$1]}" --check > "$P/check_${1}_$2.txt" 2>&1
  echo "rc $? $1 $2: $(grep -E 'check:|error' "$P/check_${1}_$2.txt" | tail -1)"
}
for p in $ORDER; do for v in base $VARS; do chk "$p" "$v" & done; done > "$OUT/checks.txt"; wait
cat "$OUT/checks.txt" | tee -a "$LOG"
B() {
  local over=(); [[ $2 != base ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$P/${1}_$2")
  timeout 40 "${over[@]}" "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines \
    --gemm-config "${CONF[$1]}" --repeats 300 2>&1 | awk -v t="$1 $2" '$1=="fused"{print t, $2, $3} /rror/{print t, $0}'
}
for r in $(seq "$ROUNDS"); do
  for p in $ORDER; do for v in base $VARS; do B "$p" "$v" | tee -a "$LOG"; done; done
done
for p in $ORDER; do
  timeout 40 "$BIN/tilefuse" bench "${PROG[$p]}" --no-check --gemm-config "${CONF[$p]}" --repeats 200 2>&1 \
    | awk -v p=$p '/^cuBLASLt GEMM only  /{print p, "cuBLASLt", $4, $5}' | tee -a "$LOG"
done
