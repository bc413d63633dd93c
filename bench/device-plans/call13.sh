#!/usr/bin/env bash
# Session 36: 2-block clusters with TMA multicast (--cuda-option cluster_multicast=1; not
# persistent: the pass pairs blocks of a non-persistent grid) against the same non-persistent
# kernel and the persistent one, on the plain GEMMs where cuBLAS's 1x2-cluster kernels lead
# under the power cap (moe_up_proj's unfused row: the GEMM on the materialized rows; the 8192^3
# GEMM). Two interleaved rounds, 30 repeats; nvidia-smi's SM clock and power sampled during each
# run. About 150 s. Carry [".devcarry/bin"]. Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call13; mkdir -p "$L"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call13
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
declare -A PROG=([moe]=bench/programs/moe_up_proj_bf16.tfs [g8k]=bench/programs/gemm_bf16_8192.tfs)
B() { # program config [cuda option]
  local opt=(); [[ -n ${3:-} ]] && opt=(--cuda-option "$3")
  nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 100 > "$L/smi.txt" &
  local smi=$!
  local t
  t=$(timeout 90 "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines --gemm-config "$2" \
    --repeats 30 "${opt[@]}" 2>&1 | awk '$1=="unfused"{print $2}')
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  echo "$1 $2 ${3:-} unfused $t clock/power $(awk -F, '$2>400{c+=$1;p+=$2;n++} END{if(n) printf "%.0f MHz %.0f W (%d samples over 400 W)", c/n, p/n, n}' "$L/smi.txt")"
}
for r in 1 2; do
  for p in moe g8k; do
    B $p 128x256x64/3/8/persistent | tee -a "$L/times.txt"
    B $p 128x256x64/3/8 | tee -a "$L/times.txt"
    B $p 128x256x64/3/8 cluster_multicast=1 | tee -a "$L/times.txt"
    pack
  done
done
"$BIN/tilefuse" emit "${PROG[g8k]}" --stage cuda --target sm_90a --gemm-config 128x256x64/3/8 \
  --cuda-option cluster_multicast=1 | grep "^//" | head -8 > "$L/cluster_notes.txt"
pack
