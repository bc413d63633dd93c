#!/usr/bin/env bash
# Prepared in session 45 (not run yet): where gather_heavy's first two tiles lose time, by ncu.
# (1) ncu --set full --import-source yes of gather_heavy's tuned fused kernel
# (128x256x64/4/8/persistent/ra256), of our plain kernel at the same shape and config without the
# gather (call42/plain_heavy_bf16.tfs, /persistent), and of cuBLASLt's kernel for gather_heavy's
# ungathered x @ w; (2) the register-A kernel's per-SASS-line stall samples (the source page, CSV)
# to find which waits the first tiles add: the fragment loads' long scoreboard, the full-barrier
# waits, the epilogue's. Every report's text goes under $OUT as it is written. About 200 s.
# Carry [".devcarry/bin"].
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call42
GH=bench/programs/gather_heavy_bf16.tfs; PH=bench/device-plans/call42/plain_heavy_bf16.tfs
NCU=(timeout 150 ncu --clock-control none --set full --import-source yes -c 1)
"${NCU[@]}" -k regex:gemm -o /tmp/gh_ra "$BIN/tilefuse" run $GH --device cuda \
  --gemm-config 128x256x64/4/8/persistent/ra256 > "$OUT/ncu_gh_ra.log" 2>&1; echo "gh ra rc $?"
ncu -i /tmp/gh_ra.ncu-rep --page details > "$OUT/ncu_gh_ra.txt" 2>&1
ncu -i /tmp/gh_ra.ncu-rep --page source --csv --print-source sass > "$OUT/ncu_gh_ra_source.csv" 2>&1
"${NCU[@]}" -k regex:gemm -o /tmp/ph "$BIN/tilefuse" run $PH --device cuda \
  --gemm-config 128x256x64/4/8/persistent > "$OUT/ncu_plain.log" 2>&1; echo "plain rc $?"
ncu -i /tmp/ph.ncu-rep --page details > "$OUT/ncu_plain.txt" 2>&1
timeout 150 ncu --clock-control none --set full -c 2 -k regex:'nvjet|xmma|cutlass|cublas' \
  "$BIN/tilefuse" bench $GH --no-check --gemm-config 128x256x64/4/8/persistent/ra256 --repeats 3 \
  > "$OUT/ncu_cublas.txt" 2>&1; echo "cublas rc $?"
for f in "$OUT"/ncu_gh_ra.txt "$OUT"/ncu_plain.txt "$OUT"/ncu_cublas.txt; do
  echo "== $f"; grep -E "^\s+(Duration|Elapsed Cycles|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|L2 Hit Rate|DRAM Throughput|Warp Cycles Per Issued Instruction|Executed Instructions|Registers Per Thread) " "$f" | head -12
done
gzip -f "$OUT"/ncu_*.txt "$OUT"/ncu_*.csv
