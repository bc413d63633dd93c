#!/usr/bin/env bash
# Session 36: where our 2-block clusters lose (call13: 4-8% slower than the same kernel without
# them). ncu (--clock-control none --set full, one launch each) of the non-persistent
# 128x256x64/3/8 kernel of the 8192^3 GEMM with and without --cuda-option cluster_multicast=1,
# then the per-SASS-line stall samples of the clustered one (--page source). About 200 s. Carry
# [".devcarry/bin"]. Reports under $OUT (text).
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
P=bench/programs/gemm_bf16_8192.tfs
NCU=(ncu --clock-control none --set full -k regex:gemm -c 1)
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/gpu.txt"
timeout 150 "${NCU[@]}" "$BIN/tilefuse" run $P --device cuda --gemm-config 128x256x64/3/8 \
  > "$OUT/ncu_plain.txt" 2>&1; echo "plain rc $?"
timeout 150 "${NCU[@]}" "$BIN/tilefuse" run $P --device cuda --gemm-config 128x256x64/3/8 \
  --cuda-option cluster_multicast=1 > "$OUT/ncu_cluster.txt" 2>&1; echo "cluster rc $?"
for f in "$OUT"/ncu_plain.txt "$OUT"/ncu_cluster.txt; do
  echo "== $f"; grep -E "^\s+(Duration|Elapsed Cycles|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|L2 Hit Rate|DRAM Throughput|Warp Cycles Per Issued Instruction|Executed Instructions|Cluster Size|Grid Size|Registers Per Thread|Theoretical Occupancy) " "$f" | head -16
done
timeout 150 ncu --clock-control none -k regex:gemm -c 1 --section SourceCounters --section WarpStateStats \
  --page source --print-source sass "$BIN/tilefuse" run $P --device cuda --gemm-config 128x256x64/3/8 \
  --cuda-option cluster_multicast=1 > "$OUT/ncu_cluster_sass.txt" 2>&1; echo "sass rc $?"
gzip -f "$OUT/ncu_cluster_sass.txt"
