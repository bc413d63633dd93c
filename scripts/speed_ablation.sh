#!/usr/bin/env bash
# The fused kernel of each program at a fixed GEMM config, with each CUDA
# option of the speed work turned off in turn, next to cuBLASLt on the
# ungathered operand in the same call (tilefuse bench rows). Meant for the
# device machine (scripts/gpu_check.sh --stage copies the binary):
#
#   scripts/speed_ablation.sh [TILEFUSE] [REPEATS]
#
# Prints one line per (program, variant): fused median us, cuBLASLt GEMM us,
# their ratio. Programs and configs are the list below (the tuned winners of
# bench/RESULTS.md).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${1:-$ROOT/.devcarry/bin/tilefuse}"
REPEATS="${2:-200}"
export TILEFUSE_CACHE_DIR="${TILEFUSE_CACHE_DIR:-/tmp/tf-cache}"
runs=(
  "tests/cases/seed_gather_mm_f16.tfs 128x256x64/4/8"
  "bench/programs/gemm_f16.tfs 128x256x64/4/8"
  "bench/programs/repeats_f16.tfs 128x256x64/4/8"
  "bench/programs/gather_heavy_bf16.tfs 128x256x64/4/8"
)
variants=(
  ""
  "hoist_copy_addresses=0"
  "setmaxnreg=0"
  "stmatrix_epilogue=0"
  "gather_cache_all=0"
)
printf '%-28s %-16s %-24s %10s %10s %7s\n' program config variant fused_us cublas_us ratio
for r in "${runs[@]}"; do
  set -- $r
  prog=$1 cfg=$2
  for v in "${variants[@]}"; do
    args=(bench "$ROOT/$prog" --gemm-config "$cfg" --repeats "$REPEATS")
    [[ -n "$v" ]] && args+=(--cuda-option "$v")
    out=$("$BIN" "${args[@]}" 2>&1)
    fused=$(awk '$1=="fused"{print $2}' <<<"$out")
    blas=$(awk '$1=="cuBLASLt"{print $4}' <<<"$out")
    ratio=$(awk -v a="$fused" -v b="$blas" 'BEGIN{if (a>0 && b>0) printf "%.3f", a/b; else print "-"}')
    printf '%-28s %-16s %-24s %10s %10s %7s\n' "$(basename "$prog" .tfs)" "$cfg" "${v:-default}" \
      "${fused:-ERR}" "${blas:--}" "$ratio"
    if [[ -z "$fused" ]]; then echo "$out" | tail -5; fi
  done
done
