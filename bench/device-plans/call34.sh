#!/usr/bin/env bash
# Session 43: ncu (--clock-control none --set full, one launch each) of the seed's tuned fused
# kernel (128x256x64/4/8/ra256 and the cp.async 128x256x64/4/8), the plain gemm_f16 kernel
# (128x256x32/8/8) and cuBLASLt's kernel for the seed's ungathered x @ y (bench's baseline row),
# to set the cycles call33 finds against the tensor pipe's and L2's utilisation of each. About
# 150 s. Carry [".devcarry/bin"]. Reports under $OUT (text, gzip).
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call34
S=bench/programs/seed_gather_mm_f16.tfs; G=bench/programs/gemm_f16.tfs
NCU=(timeout 120 ncu --clock-control none --set full -c 1)
"${NCU[@]}" -k regex:gemm "$BIN/tilefuse" run $S --device cuda --gemm-config 128x256x64/4/8/ra256 > "$OUT/ncu_seed_ra.txt" 2>&1; echo "seed ra rc $?"
"${NCU[@]}" -k regex:gemm "$BIN/tilefuse" run $S --device cuda --gemm-config 128x256x64/4/8 > "$OUT/ncu_seed_ca.txt" 2>&1; echo "seed ca rc $?"
"${NCU[@]}" -k regex:gemm "$BIN/tilefuse" run $G --device cuda --gemm-config 128x256x32/8/8 > "$OUT/ncu_g16.txt" 2>&1; echo "g16 rc $?"
timeout 150 ncu --clock-control none --set full -c 4 -k regex:'nvjet|xmma|cutlass|cublas' "$BIN/tilefuse" bench $S --no-check --gemm-config 128x256x64/4/8/ra256 --repeats 5 > "$OUT/ncu_cublas.txt" 2>&1; echo "cublas rc $?"
for f in "$OUT"/ncu_*.txt; do
  echo "== $f"; grep -E "^  [a-zA-Z_0-9]+.*\(|^\s+(Duration|Elapsed Cycles|SM Frequency|SM Active Cycles|Compute \(SM\) Throughput|Memory Throughput|L2 Hit Rate|L1/TEX Hit Rate|DRAM Throughput|Warp Cycles Per Issued Instruction|Executed Instructions|Grid Size|Block Size|Cluster Size|Registers Per Thread|Dynamic Shared Memory Per Block|Max Bandwidth|L2 Compression|Issue Slots Busy|Executed Ipc Active) " "$f" | head -30
done
gzip -f "$OUT"/ncu_*.txt
