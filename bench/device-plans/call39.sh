#!/usr/bin/env bash
# Session 45: slab_buffers_all (a buffer for each of a warp's TMA-stored epilogue slabs) on the
# GPU. (1) correctness: the edge programs under the two new variants (GpuWarpSpecialized
# *slab_buffers_all*) and `run --check` of each timed program at its timed config with the option;
# (2) timing: each program:config as emitted and with `--cuda-option slab_buffers_all=1`,
# ROUNDS interleaved rounds of `bench --no-baselines` (fused row), then each program's cuBLASLt
# row. Carry [".devcarry/bin"]. Logs: $OUT/call39.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
ROUNDS="${ROUNDS:-3}"
L=/tmp/call39; rm -rf "$L"; mkdir -p "$L"
pack() { tar czf "$OUT/call39.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call39
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
declare -A PROG=([seed]=bench/programs/seed_gather_mm_f16.tfs [gh]=bench/programs/gather_heavy_bf16.tfs
                 [rep]=bench/programs/repeats_f16.tfs [moe]=bench/programs/moe_up_proj_bf16.tfs
                 [g8k]=bench/programs/gemm_bf16_8192.tfs)
PAIRS="${PAIRS:-gh:128x256x64/4/8/persistent/ra256 seed:128x256x64/4/8/ra256/tail3 seed:128x256x64/4/8/ra256 rep:128x256x64/4/8/persistent/ra gh:128x256x64/4/8/persistent/ra moe:128x256x64/4/8/persistent/ra256}"
OPT="--cuda-option slab_buffers_all=1"
timeout 200 "$BIN/test_gpu" --gtest_filter='*slab_buffers_all*' > "$L/test_gpu.txt" 2>&1
echo "rc $? test_gpu: $(grep -E '^\[  (PASSED|FAILED) ' "$L/test_gpu.txt" | tr '\n' ' ')" | tee -a "$L/summary.txt"
grep -E "Failure|FAILED|rel_err|Expected" "$L/test_gpu.txt" | head -20
for pc in $PAIRS; do
  IFS=: read -r p c <<< "$pc"
  [[ "$p" == moe || "$p" == g8k ]] && continue  # (their f64 reference takes minutes)
  timeout 90 "$BIN/tilefuse" run "${PROG[$p]}" --device cuda --check --gemm-config "$c" $OPT \
    > "$L/check_${p}_${c//\//_}.txt" 2>&1
  echo "rc $? check $p $c: $(grep -E 'ok|FAIL|rel_err' "$L/check_${p}_${c//\//_}.txt" | tr '\n' ' ' | cut -c1-200)" \
    | tee -a "$L/summary.txt"
done
pack
B() { # program config [options]
  local p=$1 c=$2; shift 2
  timeout 90 "$BIN/tilefuse" bench "${PROG[$p]}" --no-check --no-baselines --gemm-config "$c" \
    --repeats 400 "$@" 2>&1 | awk -v t="$p $c $*" '$1=="fused"{print t, $2, $3} /error/{print t, $0}'
}
for r in $(seq "$ROUNDS"); do
  for pc in $PAIRS; do
    IFS=: read -r p c <<< "$pc"
    B "$p" "$c" | tee -a "$L/times.txt"
    B "$p" "$c" $OPT | tee -a "$L/times.txt"
  done
  pack
done
for p in seed gh rep moe; do
  timeout 120 "$BIN/tilefuse" bench "${PROG[$p]}" --no-check --gemm-config 128x256x64/4/8 --repeats 200 \
    > "$L/${p}_baselines.txt" 2>&1
  echo "$p: $(awk '/^cuBLASLt GEMM only  /{print "cuBLASLt", $4, $5}' "$L/${p}_baselines.txt" | tr '\n' ' ')" \
    | tee -a "$L/times.txt"
done
pack
