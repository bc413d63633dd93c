#!/usr/bin/env bash
# Where register_a's extra cycles at gather_heavy go (4% over the plain kernel in one launch on
# an H100, session 31; equal at moe_up_proj): ncu's per-SASS-instruction warp-stall samples of
# the register_a kernel and of the plain kernel on the materialized rows, same config, then the
# seed's first-tile cost (one tile a block: register_a against the plain twin, with cuBLASLt, in
# one bench call each). ~240 s. Reports under $OUT.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$OUT/gpu.txt"
CFG=128x256x64/4/8/persistent
for v in ra plain; do
  if [[ $v == ra ]]; then prog=bench/programs/gather_heavy_bf16.tfs; cfg=$CFG/ra
  else prog=bench/device-plans/twins/gh_plain.tfs; cfg=$CFG; fi
  timeout 120 ncu --clock-control none --set full --import-source yes -k regex:gemm -c 1 \
    -f -o "/tmp/gh_$v" "$BIN/tilefuse" run "$prog" --device cuda --plan fused \
    --gemm-config "$cfg" > "$OUT/ncu_$v.log" 2>&1
  ncu -i "/tmp/gh_$v.ncu-rep" --page source --csv --print-source sass \
    > "$OUT/source_$v.csv" 2>&1
  ncu -i "/tmp/gh_$v.ncu-rep" --page details --section WarpStateStats \
    > "$OUT/stalls_$v.txt" 2>&1
done
B() { timeout 60 "$BIN/tilefuse" bench "$@" --no-check --repeats 200; }
B bench/programs/seed_gather_mm_f16.tfs --gemm-config 128x256x64/3/8/ra > "$OUT/seed_ra.txt" 2>&1
B bench/device-plans/twins/seed_plain.tfs --gemm-config 128x256x64/3/8 > "$OUT/seed_plain.txt" 2>&1
grep -h -A6 "^plan" "$OUT"/seed_*.txt > "$OUT/summary.txt"
