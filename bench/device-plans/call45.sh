#!/usr/bin/env bash
# Session 48: (0) the session's GPU changes under test: of two bad gathers the first in program
# order (GpuCases.OfTwo*), a fixed program's strides at run time (GpuCallable.*), with the cases,
# the later-kernel error and the unread-index tests beside them; (1) call44.sh (register A's
# 32-bit fragment loads against the 16-byte ones, ROUNDS rounds). About 330 s.
# Carry [".devcarry/bin"] (and .devcarry/w1 for call22 after it). Logs: $OUT/log.txt, $OUT/tests.txt.
set -uo pipefail
BIN=.devcarry/bin; OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call45
[[ -e /work/main/tests ]] || { mkdir -p /work && ln -sfn "$PWD" /work/main; }
TILEFUSE_TEST_BINARY="$PWD/$BIN/tilefuse" timeout 150 "$BIN/test_gpu" \
  --gtest_filter='GpuCases.OfTwo*:GpuCases.ALater*:GpuCases.EverySharedCase*:GpuUnreadIndex*:GpuCallable.*' \
  > "$OUT/tests.txt" 2>&1
echo "session-48 tests rc $?: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Expected|Which is|actual" "$OUT/tests.txt" | head -30
OUT="$OUT" ROUNDS="${ROUNDS:-3}" bash bench/device-plans/call44.sh
