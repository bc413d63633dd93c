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
L=/tmp/call8; mkdir -p "$L/noidx"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call8
S=bench/programs/seed_gather_mm_f16.tfs C=128x256x64/3/8/ra256
"$BIN/tilefuse" emit "$S" --stage cuda --target sm_90a --plan fused --gemm-config "$C" > "$L/seed.cu"
python3 bench/device-plans/noidx.py "$L/seed.cu" "$L/noidx/gemm0.cu"
for r in 1 2; do
  for v in base noidx; do
    over=(); [[ $v != base ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$L/noidx")
    timeout 60 "${over[@]}" "$BIN/tilefuse" bench "$S" --no-check --gemm-config "$C" --repeats 200 \
      2>&1 | awk -v t="seed $v" '$1=="fused"||$1=="cuBLASLt"{print t, $1, $2, $3}' | tee -a "$L/seed_times.txt"
  done
  tar czf "$OUT/logs8.tgz" -C "$L" .
done
timeout 150 "$BIN/test_gpu" --gtest_filter='GpuCases.*' > "$L/gpucases.txt" 2>&1
echo "rc $?" >> "$L/gpucases.txt"; grep -E "^\[  (PASSED|FAILED) |^rc" "$L/gpucases.txt"
"$BIN/tilefuse" run bench/programs/gather_heavy_bf16.tfs --device cuda --plan fused \
  --gemm-config 128x256x64/4/8/persistent/ra256 -v > "$L/run_v.txt" 2>&1
grep -E "threads" "$L/run_v.txt"
tar czf "$OUT/logs8.tgz" -C "$L" .
