#!/bin/sh
# Rewrites tests/unit/lower/golden/*.tir from the current lowering.
# Usage: tests/unit/lower/update_goldens.sh BUILD_DIR
set -e
TILEFUSE_UPDATE_GOLDENS=1 "${1:-build}/tests/test_lower" --gtest_filter='Golden*'
