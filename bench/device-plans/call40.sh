#!/usr/bin/env bash
# Session 45: the default form after df09560 on the GPU (the edge programs' default and
# register_a=1 variants: one-tile register A now takes a buffer for each epilogue slab; GpuSplitTail),
# then the seed tuned from an empty cache and benched. About 200 s. Carry [".devcarry/bin"].
set -uo pipefail
BIN=.devcarry/bin; OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call40
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/log.txt"
timeout 120 "$BIN/test_gpu" --gtest_filter='*EdgeProgramsMatchTheOracle/register_a_1:*EdgeProgramsMatchTheOracle/default:GpuSplitTail.*' 2>&1 | grep -E "^\[  (PASSED|FAILED)|Failure|OK \]" | tee -a "$OUT/log.txt"
timeout 100 "$BIN/tilefuse" tune bench/programs/seed_gather_mm_f16.tfs 2>&1 | tail -2 | tee -a "$OUT/log.txt"
timeout 60 "$BIN/tilefuse" bench bench/programs/seed_gather_mm_f16.tfs --no-check 2>&1 | grep -E "^(fused|unfused|chosen|cuBLASLt)" | tee -a "$OUT/log.txt"
