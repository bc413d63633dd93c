#!/usr/bin/env bash
# Builds everything and runs the whole test suite (unit, end-to-end, the
# parser fuzzer for TILEFUSE_FUZZ_SECONDS, default 60). Exit code 0 = all passed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
ctest --output-on-failure -j"$(nproc)" "$@"
