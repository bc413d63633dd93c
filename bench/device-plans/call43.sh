#!/usr/bin/env bash
# Session 46: is gather_heavy's wave quantization (512 tiles of 128x256 over 132 SMs: 3.88 waves,
# the makespan 4 tiles) worth a stream-K form of register A? (1) Two interleaved bench rounds of
# gather_heavy at /persistent/ra256 (the tuned kernel), /persistent (cp.async) and /streamk132
# (cp.async stream-K, which the tuner does not try for a gathered operand), and of its plain twin
# (call42/plain_heavy_bf16.tfs) at /persistent and /streamk132; then the cuBLASLt row.
# (2) call42.sh (ncu of the register-A kernel, the plain twin and cuBLASLt's kernel).
# About 450 s. Carry [".devcarry/bin"].
set -uo pipefail
BIN=.devcarry/bin; OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"; LOG="$OUT/log.txt"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call43
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$LOG"
# (0) The ring count fold (ring_fold_every_tile, session 46) on the GPU: GpuRingFold and the
# ws edge-program variants with it, and stream-K folded.
[[ -e /work/main/tests ]] || { mkdir -p /work && ln -sfn "$PWD" /work/main; }
TILEFUSE_TEST_BINARY="$PWD/$BIN/tilefuse" timeout 150 "$BIN/test_gpu" \
  --gtest_filter='GpuRingFold.*:*ring_fold*:GpuStreamK*' > "$OUT/fold_tests.txt" 2>&1
echo "fold tests rc $?: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/fold_tests.txt" | tr '\n' ' ')" | tee -a "$LOG"
GH=bench/programs/gather_heavy_bf16.tfs; PH=bench/device-plans/call42/plain_heavy_bf16.tfs
C=128x256x64/4/8
for c in $C/persistent/ra256 $C/streamk132; do
  timeout 40 "$BIN/tilefuse" run $GH --device cuda --check --gemm-config $c 2>&1 \
    | grep -E "check|error|declined" | sed "s|^|gh $c: |" | tee -a "$LOG"
done
B() { timeout 40 "$BIN/tilefuse" bench "$1" --no-check --no-baselines --gemm-config "$2" \
  --repeats 300 2>&1 | awk -v t="$(basename $1 .tfs) $2" '$1=="fused"{print t, $2, $3} /error/{print t, $0}' | tee -a "$LOG"; }
for r in 1 2; do
  B $GH $C/persistent/ra256; B $GH $C/persistent; B $GH $C/streamk132
  B $PH $C/persistent; B $PH $C/streamk132
done
timeout 40 "$BIN/tilefuse" bench $GH --no-check --gemm-config $C/persistent/ra256 --repeats 200 2>&1 \
  | awk '/^cuBLASLt GEMM only  /{print "gh cuBLASLt", $4, $5}' | tee -a "$LOG"
timeout 40 "$BIN/tilefuse" explain $GH --gemm-config $C/streamk132 > "$OUT/explain_gh_sk.txt" 2>&1
mkdir -p "$OUT/ncu"; OUT="$OUT/ncu" bash bench/device-plans/call42.sh 2>&1 | tee -a "$LOG"
