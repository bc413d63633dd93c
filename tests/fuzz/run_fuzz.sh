#!/usr/bin/env bash
# Builds the fuzzers (clang-14, libFuzzer + ASan + UBSan) in BUILD_DIR and
# runs one for ${TILEFUSE_FUZZ_SECONDS:-60} seconds on a copy of its seed
# corpus (the repository is never written):
#   run_fuzz.sh BUILD_DIR [parser|pipeline]     (default: parser)
# parser: the .tfs front end, seeds tests/fuzz/corpus, inputs up to 4 KiB.
# pipeline: parse -> plan -> lower -> passes (CPU and sm_90a) -> CPU executor,
#   seeds tests/fuzz/corpus and tests/fuzz/pipeline_corpus (tiny shapes),
#   inputs up to ${TILEFUSE_FUZZ_MAX_LEN:-262144} bytes. libFuzzer starts
#   its length limit at the largest seed and grows it slowly from there, so
#   the pipeline corpus holds long and deep seeds (large_*.tfs: 300 chained
#   statements, a 1000-term line, 30 chained gathers, 20 summed GEMMs, 100
#   squares; 0.5-1.5 s each under ASan) that put such programs in reach
#   from the start (with only the small seeds the limit stayed at 1257
#   bytes for a whole hour).
# Exits non-zero on any crash, sanitizer report, leak, timeout or
# out-of-memory; the offending input is saved under BUILD_DIR/artifacts/.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 BUILD_DIR [parser|pipeline]" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$1"
target="${2:-parser}"
seconds="${TILEFUSE_FUZZ_SECONDS:-60}"
case "$target" in
  parser) max_len=4096 ;;
  pipeline) max_len="${TILEFUSE_FUZZ_MAX_LEN:-262144}" ;;
  *) echo "run_fuzz.sh: unknown fuzzer '$target' (parser or pipeline)" >&2; exit 2 ;;
esac

for tool in clang-14 clang++-14 cmake ninja; do
  if ! command -v "$tool" >/dev/null; then
    echo "run_fuzz.sh: $tool not found (apt-get install clang-14 cmake ninja-build)" >&2
    exit 1
  fi
done

CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTILEFUSE_FUZZ=ON >/dev/null
cmake --build "$build" --target "${target}_fuzzer" -j "${TILEFUSE_FUZZ_JOBS:-2}"

corpus="$build/corpus_$target"
artifacts="$build/artifacts/$target"
rm -rf "$corpus"
mkdir -p "$corpus" "$artifacts"
cp "$here"/corpus/* "$corpus"/
if [[ "$target" == pipeline ]]; then cp "$here"/pipeline_corpus/* "$corpus"/; fi

# libFuzzer exits 0 when the time is up with nothing found, non-zero otherwise.
"$build/tests/fuzz/${target}_fuzzer" \
  -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
  -dict="$here/tfs.dict" -artifact_prefix="$artifacts/" -print_final_stats=1 \
  "$corpus"
