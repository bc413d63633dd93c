#!/usr/bin/env bash
# Session 38: the rows' and the runoff's shared inputs (DeviceInputs) on the GPU: `TuneGpu.*`
# (the two new tests, bench's, and the tuner's with the plan runoff), then `call22.sh` (issue 15's
# programs tuned, benched with every row in alternation, then compare_torch) on whichever card
# comes. About 450 s (CT_LIMIT shortens compare_torch). Carry [".devcarry/bin"].
# Logs: $OUT/tests.txt, $OUT/c20/logs.tgz, $OUT/c17/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export TILEFUSE_TEST_BINARY="$PWD/$BIN/tilefuse" TILEFUSE_CACHE_DIR=/tmp/tf-cache-call26-tests
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
timeout 240 "$BIN/test_gpu" --gtest_filter="${GTESTS:-TuneGpu.*}" > "$OUT/tests.txt" 2>&1
echo "tests rc $?"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) " "$OUT/tests.txt" | tail -20
OUT="$OUT" CT_LIMIT="${CT_LIMIT:-100}" bash bench/device-plans/call22.sh
