#!/usr/bin/env bash
# Session 38: issue 15's two measurements in one call on one tuning: call20 (issue 15's programs
# tuned from an empty cache, then `tilefuse bench` with every row timed in alternation; TESTS=0
# skips its GPU tests), then call17 (compare_torch, eager and tilefuse's choice in alternation)
# on the same cache, so it times the choices bench reported. About 550 s (CT_LIMIT: the seconds
# after which compare_torch starts no program). Carry [".devcarry/bin"].
# Logs: $OUT/c20/logs.tgz, $OUT/c17/logs.tgz.
set -uo pipefail
OUT="${OUT:-/tmp/out}"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call22
OUT="$OUT/c20" TESTS="${TESTS:-0}" bash bench/device-plans/call20.sh
OUT="$OUT/c17" TIME_LIMIT="${CT_LIMIT:-150}" bash bench/device-plans/call17.sh
