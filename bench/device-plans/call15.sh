#!/usr/bin/env bash
# Session 37: persistent kernels in 2-block clusters with TMA multicast of B (the cluster pass
# now pairs a persistent grid's tiles 2c + jG, 2c + 1 + jG; --cuda-option cluster_multicast=1 on
# a /persistent config). First the GPU check of the new form (every warp-specialized edge
# program in the cluster_multicast=1,persistent=1 variant against the f64 oracle, and `run
# --check` on the seed and gather_heavy), then two interleaved bench rounds: persistent with
# and without the cluster at 3 and 4 stages on moe_up_proj (fused: gathered A, B multicast;
# unfused: the plain GEMM) and the 8192^3 GEMM, and gather_heavy's fused kernel. nvidia-smi's
# SM clock and power sampled during each run. About 300 s. Carry [".devcarry/bin"].
# Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call15; mkdir -p "$L"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call15
export TILEFUSE_TEST_BINARY="$PWD/$BIN/tilefuse"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
# 1. Correct on the GPU.
timeout 200 "$BIN/test_gpu" --gtest_filter='GpuWarpSpecialized/*cluster_multicast_1*' \
  > "$L/test_gpu.txt" 2>&1; echo "test_gpu rc $?" | tee -a "$L/checks.txt"
tail -4 "$L/test_gpu.txt" | tee -a "$L/checks.txt"
for p in seed_gather_mm_f16 gather_heavy_bf16; do
  for c in 128x256x64/3/8/persistent 128x256x64/4/8/persistent; do
    timeout 60 "$BIN/tilefuse" run "bench/programs/$p.tfs" --check --gemm-config "$c" \
      --cuda-option cluster_multicast=1 > "$L/check_$p.txt" 2>&1
    echo "$p $c cluster: rc $? $(tail -1 "$L/check_$p.txt")" | tee -a "$L/checks.txt"
  done
done
"$BIN/tilefuse" emit bench/programs/moe_up_proj_bf16.tfs --stage cuda --target sm_90a \
  --gemm-config 128x256x64/3/8/persistent --cuda-option cluster_multicast=1 | grep "^//" \
  | head -9 > "$L/cluster_notes.txt"
pack
# 2. Speed.
declare -A PROG=([moe]=bench/programs/moe_up_proj_bf16.tfs [g8k]=bench/programs/gemm_bf16_8192.tfs
  [gh]=bench/programs/gather_heavy_bf16.tfs)
B() { # program config [cuda option]
  local opt=(); [[ -n ${3:-} ]] && opt=(--cuda-option "$3")
  nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 50 > "$L/smi.txt" &
  local smi=$!
  local t
  t=$(timeout 120 "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines --gemm-config "$2" \
    --repeats "${4:-30}" "${opt[@]}" 2>&1 | awk '$1=="fused"||$1=="unfused"{printf "%s %s ", $1, $2}')
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  echo "$1 $2 ${3:-} $t| $(awk -F, '$2>300{c+=$1;p+=$2;n++} END{if(n) printf "%.0f MHz %.0f W (%d samples over 300 W)", c/n, p/n, n}' "$L/smi.txt")"
}
for r in 1 2; do
  for p in moe g8k; do
    for c in 128x256x64/3/8/persistent 128x256x64/4/8/persistent; do
      B $p $c | tee -a "$L/times.txt"
      B $p $c cluster_multicast=1 | tee -a "$L/times.txt"
    done
    pack
  done
  B gh 128x256x64/4/8/persistent "" 200 | tee -a "$L/times.txt"
  B gh 128x256x64/4/8/persistent cluster_multicast=1 200 | tee -a "$L/times.txt"
  B gh 128x256x64/4/8/persistent/ra256 "" 200 | tee -a "$L/times.txt"
  pack
done
