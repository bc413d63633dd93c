#!/usr/bin/env bash
# Builds the .tfs parser fuzzer (clang-14, libFuzzer + ASan + UBSan) in
# BUILD_DIR and runs it for ${TILEFUSE_FUZZ_SECONDS:-60} seconds on a copy of
# tests/fuzz/corpus (the repository is never written). Exits non-zero on any
# crash, sanitizer report, leak, timeout or out-of-memory; the offending
# input is saved under BUILD_DIR/artifacts/.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$1"
seconds="${TILEFUSE_FUZZ_SECONDS:-60}"

for tool in clang-14 clang++-14 cmake ninja; do
  if ! command -v "$tool" >/dev/null; then
    echo "run_fuzz.sh: $tool not found (apt-get install clang-14 cmake ninja-build)" >&2
    exit 1
  fi
done

CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTILEFUSE_FUZZ=ON >/dev/null
cmake --build "$build" --target parser_fuzzer -j "${TILEFUSE_FUZZ_JOBS:-2}"

corpus="$build/corpus"
artifacts="$build/artifacts"
rm -rf "$corpus"
mkdir -p "$corpus" "$artifacts"
cp "$here"/corpus/* "$corpus"/

# libFuzzer exits 0 when the time is up with nothing found, non-zero otherwise.
"$build/tests/fuzz/parser_fuzzer" \
  -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -dict="$here/tfs.dict" -artifact_prefix="$artifacts/" -print_final_stats=1 \
  "$corpus"
