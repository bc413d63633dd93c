#!/usr/bin/env bash
# Session 34's one call, when the device came late: call7.sh (the producer's L2 prefetch of
# register_a's rows, D = 2/4/6, checked and timed), then the seed's cost of the index's dependent
# latency (the emitted /ra256 kernel against a copy whose fragment rows are `cse + i`, not
# `index[cse + i]`: wrong results, --no-check; it bounds what any index handling can win at the
# seed), then GpuCases (refactored in session 33, not yet run on a GPU) and `run -v`'s launch
# line for a persistent kernel. About 480 s; DS and ROUNDS pass to call7.sh. Carry [".devcarry/bin"]; logs in $OUT.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
bash bench/device-plans/call7.sh
L=/tmp/call8 PACK="$OUT/logs8.tgz" bash bench/device-plans/seed_bound.sh
L=/tmp/call8
timeout 150 "$BIN/test_gpu" --gtest_filter='GpuCases.*' > "$L/gpucases.txt" 2>&1
echo "rc $?" >> "$L/gpucases.txt"; grep -E "^\[  (PASSED|FAILED) |^rc" "$L/gpucases.txt"
"$BIN/tilefuse" run bench/programs/gather_heavy_bf16.tfs --device cuda --plan fused \
  --gemm-config 128x256x64/4/8/persistent/ra256 -v > "$L/run_v.txt" 2>&1
grep -E "threads" "$L/run_v.txt"
tar czf "$OUT/logs8.tgz" -C "$L" .
