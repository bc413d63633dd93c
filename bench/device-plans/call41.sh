#!/usr/bin/env bash
# Session 45: register_a in a 2-block multicast cluster (d35dd5b) on the GPU, short: the two new
# edge-program variants (*register_a_1*cluster_multicast_1*), `run --check` of gather_heavy at
# /persistent/ra256 in the cluster, then two interleaved bench rounds with and without the cluster
# (gather_heavy, the seed), and the cuBLASLt rows. About 150 s. Carry [".devcarry/bin"].
set -uo pipefail
BIN=.devcarry/bin; OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"; LOG="$OUT/log.txt"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call41
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$LOG"
CL="--cuda-option cluster_multicast=1"
timeout 80 "$BIN/test_gpu" --gtest_filter='*register_a_1*cluster_multicast_1*' 2>&1 \
  | grep -E "^\[  (PASSED|FAILED)|Failure|OK \]|rel_err" | head -20 | tee -a "$LOG"
timeout 30 "$BIN/tilefuse" run bench/programs/gather_heavy_bf16.tfs --device cuda --check \
  --gemm-config 128x256x64/4/8/persistent/ra256 $CL 2>&1 | grep -E "check|error" | tee -a "$LOG"
B() { timeout 30 "$BIN/tilefuse" bench "bench/programs/$1.tfs" --no-check --no-baselines \
  --gemm-config "$2" --repeats 300 "${@:3}" 2>&1 | awk -v t="$1 $2 ${*:3}" '$1=="fused"{print t, $2, $3} /error/{print t, $0}' | tee -a "$LOG"; }
for r in 1 2; do
  B gather_heavy_bf16 128x256x64/4/8/persistent/ra256
  B gather_heavy_bf16 128x256x64/4/8/persistent/ra256 $CL
  B seed_gather_mm_f16 128x256x64/4/8/ra256
  B seed_gather_mm_f16 128x256x64/4/8/ra256 $CL
done
for p in gather_heavy_bf16 seed_gather_mm_f16; do
  timeout 30 "$BIN/tilefuse" bench "bench/programs/$p.tfs" --no-check --gemm-config 128x256x64/4/8 \
    --repeats 200 2>&1 | awk -v p=$p '/^cuBLASLt GEMM only  /{print p, "cuBLASLt", $4, $5}' | tee -a "$LOG"
done
