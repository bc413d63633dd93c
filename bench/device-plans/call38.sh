#!/usr/bin/env bash
# Session 44, the lean form of call37: (1) correctness: GpuSplitTail (the compiler's split tail in
# every form), GpuUnreadIndex, GpuCases, and the out-of-range integer comparisons (call36/*.tfs);
# (2) wg1/wgrate; (3) the split tail by the compiler (`--gemm-config .../tailT`) against the same
# config without it, ROUNDS interleaved rounds of `bench --no-baselines` (fused row), then each
# program's cuBLASLt row. Carry [".devcarry/bin", ".devcarry/wg1"]. Logs: $OUT/call38.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
ROUNDS="${ROUNDS:-2}"
L=/tmp/call38; rm -rf "$L"; mkdir -p "$L"
pack() { tar czf "$OUT/call38.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call38
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
timeout 240 "$BIN/test_gpu" --gtest_filter='GpuSplitTail.*:GpuUnreadIndex.*:GpuCases.*' > "$L/test_gpu.txt" 2>&1
echo "rc $? test_gpu: $(grep -E '^\[  (PASSED|FAILED) ' "$L/test_gpu.txt" | tr '\n' ' ')" | tee -a "$L/summary.txt"
grep -E "Failure|FAILED|rel_err|Expected" "$L/test_gpu.txt" | head -20
for p in bench/device-plans/call36/*.tfs; do
  n=$(basename "$p" .tfs)
  timeout 60 "$BIN/tilefuse" run "$p" --device cuda --check -v > "$L/fix_$n.txt" 2>&1
  echo "rc $? $p: $(grep -c ' ok$' "$L/fix_$n.txt") ok of $(grep -c 'check:' "$L/fix_$n.txt") checks" | tee -a "$L/summary.txt"
done
pack
[[ -x .devcarry/wg1/wgrate ]] && timeout 30 .devcarry/wg1/wgrate 2>&1 | tee "$L/wgrate.txt"
pack
declare -A PROG=([seed]=bench/programs/seed_gather_mm_f16.tfs [g16]=bench/programs/gemm_f16.tfs
                 [gh]=bench/programs/gather_heavy_bf16.tfs)
# program:config pairs, each timed as given and with its tail
PAIRS="${PAIRS:-seed:128x256x64/4/8/ra256:3 seed:128x256x64/4/8:4 g16:128x256x32/8/8:8 gh:128x256x64/4/8/persistent/ra256:3 gh:128x256x64/4/8/persistent/ra256:1 gh:128x256x64/4/8/persistent:2}"
B() { # program config
  timeout 90 "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines --gemm-config "$2" \
    --repeats 400 2>&1 | awk -v t="$1 $2" '$1=="fused"{print t, $2, $3} /error/{print t, $0}'
}
for r in $(seq "$ROUNDS"); do
  for pc in $PAIRS; do
    IFS=: read -r p c t <<< "$pc"
    B "$p" "$c" | tee -a "$L/times.txt"
    B "$p" "$c/tail$t" | tee -a "$L/times.txt"
  done
  pack
done
for p in seed g16 gh; do
  timeout 90 "$BIN/tilefuse" bench "${PROG[$p]}" --no-check --gemm-config 128x256x64/4/8 --repeats 400 \
    > "$L/${p}_baselines.txt" 2>&1
  echo "$p: $(awk '/^cuBLASLt GEMM only  /{print "cuBLASLt", $4, $5}' "$L/${p}_baselines.txt" | tr '\n' ' ')" \
    | tee -a "$L/times.txt"
done
pack
