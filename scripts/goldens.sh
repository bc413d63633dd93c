#!/usr/bin/env bash
# Golden CUDA kernels: `tilefuse emit --stage=cuda` of every case, example
# and bench program, for sm_80 and sm_90a, both plans, at the template's
# default config and at the configs the bench tunes to, compared with the
# committed files under tests/goldens/cuda/.
#
#   scripts/goldens.sh [--check] [TILEFUSE]   # compare (the ctest `goldens_cuda`)
#   scripts/goldens.sh --update [TILEFUSE]    # regenerate (the only way they change)
#
# TILEFUSE defaults to build/tilefuse. One file per (program, target, plan,
# config): the emitted translation units, or the emitter's error and exit
# code where a config does not apply. --check prints a unified diff of every
# kernel that changed and exits 1; the goldens are never edited by hand.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
mode=check
case "${1:-}" in
  --check) shift ;;
  --update) mode=update; shift ;;
esac
BIN="${1:-$ROOT/build/tilefuse}"
GOLD="$ROOT/tests/goldens/cuda"
[[ -x "$BIN" ]] || { echo "goldens: no tilefuse binary at $BIN" >&2; exit 2; }

# Configs: the heuristic default, the seed's tuned winner (128x256x64/4/8),
# the tuned choices of gather_heavy and moe_up_proj (128x128x64/3/8,
# 256x128x64/4/8) and of skinny (64x64x64/4/4), and split-K over 4 blocks a
# tile (128x128x64/3/8/splitk4: the workspace, if_last_arrival, the fixup).
configs=(default 128x256x64/4/8 128x128x64/3/8 256x128x64/4/8 64x64x64/4/4 128x128x64/3/8/splitk4)
targets=(sm_80 sm_90a)
plans=(fused unfused)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/out"
programs=("$ROOT"/tests/cases/*.tfs "$ROOT"/examples/*.tfs "$ROOT"/bench/programs/*.tfs)
for f in "${programs[@]}"; do
  case "$f" in
    "$ROOT"/bench/*) dir=bench ;;
    *) dir=$(basename "$(dirname "$f")") ;;
  esac
  b="${dir}__$(basename "$f" .tfs)"
  for t in "${targets[@]}"; do
    for p in "${plans[@]}"; do
      for c in "${configs[@]}"; do
        args=(emit "$f" --stage=cuda --target "$t" --plan "$p")
        [[ "$c" != default ]] && args+=(--gemm-config "$c")
        name="$b.$t.$p.${c//\//-}.cu"
        # The program's path is printed relative to the repository.
        (cd "$ROOT" && "$BIN" "${args[@]/#$ROOT\//}" > "$work/out/$name" 2> "$work/err")
        rc=$?
        if [[ $rc != 0 ]]; then
          { echo "// exit $rc"; sed 's/^/\/\/ /' "$work/err"; } > "$work/out/$name"
        fi
      done
      # The persistent kernel (sm_90a, fused): its tile loop and, for a
      # gather, the index prologue loaded a tile ahead (prefetch_prologue).
      if [[ "$t" == sm_90a && "$p" == fused ]]; then
        (cd "$ROOT" && "$BIN" emit "${f#$ROOT/}" --stage=cuda --target "$t" --plan "$p" \
          --gemm-config 128x128x64/4/8/persistent > "$work/out/$b.$t.$p.128x128x64-4-8-persistent.cu" 2>&1)
        # Ping-pong: two one-warpgroup consumer teams taking alternate tiles.
        (cd "$ROOT" && "$BIN" emit "${f#$ROOT/}" --stage=cuda --target "$t" --plan "$p" \
          --gemm-config 128x128x64/4/4/pingpong > "$work/out/$b.$t.$p.128x128x64-4-4-pingpong.cu" 2>&1)
        # BLOCK_K 32 on wgmma: A in the 64-byte swizzle (TMA's or cp.async's).
        (cd "$ROOT" && "$BIN" emit "${f#$ROOT/}" --stage=cuda --target "$t" --plan "$p" \
          --gemm-config 128x128x32/6/8/persistent > "$work/out/$b.$t.$p.128x128x32-6-8-persistent.cu" 2>&1)
        # The split tail (split_tail): the last 3 k-tiles N half by N half,
        # the per-warp epilogue cut between the halves; one tile a block,
        # and persistent with register A (its deferred fragment loads).
        (cd "$ROOT" && "$BIN" emit "${f#$ROOT/}" --stage=cuda --target "$t" --plan "$p" \
          --gemm-config 128x256x64/4/8/tail3 > "$work/out/$b.$t.$p.128x256x64-4-8-tail3.cu" 2>&1)
        (cd "$ROOT" && "$BIN" emit "${f#$ROOT/}" --stage=cuda --target "$t" --plan "$p" \
          --gemm-config 128x256x64/4/8/persistent/ra/tail3 \
          > "$work/out/$b.$t.$p.128x256x64-4-8-persistent-ra-tail3.cu" 2>&1)
        # One tile a block with register A (the seed's tuned form): the B-only
        # ring leaves room for a buffer for each epilogue slab (slab_buffers_all).
        (cd "$ROOT" && "$BIN" emit "${f#$ROOT/}" --stage=cuda --target "$t" --plan "$p" \
          --gemm-config 128x256x64/4/8/ra256/tail3 \
          > "$work/out/$b.$t.$p.128x256x64-4-8-ra256-tail3.cu" 2>&1)
        # Stream-K over 132 blocks: the whole tiles round robin, then each
        # block's pieces of the last wave's K iterations, the fix-up by the
        # last arrival (an error where a size is symbolic).
        (cd "$ROOT" && "$BIN" emit "${f#$ROOT/}" --stage=cuda --target "$t" --plan "$p" \
          --gemm-config 128x256x64/4/8/streamk132 > "$work/out/$b.$t.$p.128x256x64-4-8-streamk132.cu" 2>&1)
      fi
      # The f32 GEMM on TF32 tensor cores (--allow-tf32), default config.
      if [[ "$b" == *gemm_f32 ]]; then
        (cd "$ROOT" && "$BIN" emit "${f#$ROOT/}" --stage=cuda --target "$t" --plan "$p" \
          --allow-tf32 > "$work/out/$b.$t.$p.tf32.cu" 2>&1)
      fi
    done
  done
done

if [[ $mode == update ]]; then
  rm -rf "$GOLD"
  mkdir -p "$GOLD"
  cp "$work"/out/*.cu "$GOLD"/
  echo "goldens: wrote $(ls "$GOLD" | wc -l) files to tests/goldens/cuda"
  exit 0
fi
status=0
(cd "$work" && ln -s "$GOLD" expected && mv out emitted && diff -ru expected emitted) > "$work/diff" 2>&1 || status=1
if [[ $status != 0 ]]; then
  echo "goldens: the emitted CUDA differs from tests/goldens/cuda (if intended, run" \
       "scripts/goldens.sh --update and commit the change with its reason):"
  head -c 200000 "$work/diff"
  exit 1
fi
echo "goldens: $(ls "$GOLD" | wc -l) kernels files match"
