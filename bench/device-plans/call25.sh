#!/usr/bin/env bash
# Session 38: a block with TMA stores in flight waits for their completion before it exits
# (`cp.async.bulk.wait_group 0`), where CUTLASS's epilogue (cute's tma_store_wait) and Triton's
# wait only until the stores have read their shared memory (`.read`): the writes then complete on
# their own and the next kernel sees them. Emitted kernels against the same source with the
# `.read` exit wait, by kernel override: `run --check` of each variant, then ROUNDS interleaved
# rounds of bench (--no-baselines), then the baselines once. Also the GPU tests in GTESTS.
# About 200 s. Carry [".devcarry/bin"]. Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
ROUNDS="${ROUNDS:-3}"
L=/tmp/call25; V=/tmp/exitread; rm -rf "$L" "$V"; mkdir -p "$L" "$V"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call25
export TILEFUSE_TEST_BINARY="$PWD/$BIN/tilefuse"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
P=bench/programs
CASES=("seed_gather_mm_f16 128x256x64/4/8" "gemm_f16 128x256x64/4/8"
       "gather_heavy_bf16 128x256x64/4/8" "gather_heavy_bf16 128x256x64/4/8/persistent/ra256"
       "repeats_f16 128x256x64/4/8")
for i in "${!CASES[@]}"; do
  set -- ${CASES[$i]}
  mkdir -p "$V/$i"
  "$BIN/tilefuse" emit "$P/$1.tfs" --stage cuda --target sm_90a --plan fused --gemm-config "$2" \
    | sed 's|tf::bulk_wait<0>();  // its TMA stores are done|tf::bulk_wait_read<0>();  // its TMA stores have read shared memory|' \
    > "$V/$i/gemm0.cu"
  grep -c "bulk_wait_read<0>();  // its TMA" "$V/$i/gemm0.cu" | sed "s|^|$1 $2 exit waits changed: |"
  TILEFUSE_OVERRIDE_SOURCE="$V/$i" timeout 60 "$BIN/tilefuse" run "$P/$1.tfs" --device cuda \
    --plan fused --gemm-config "$2" --check > "$L/check_$i.txt" 2>&1
  echo "check rc $? $1 $2: $(grep -E 'check:' "$L/check_$i.txt" | head -1)"
done
cp -r "$V" "$L/sources"; pack
B() { # case-index variant
  set -- "$1" "$2" ${CASES[$1]}
  local over=(); [[ $2 == read ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$V/$1")
  timeout 60 "${over[@]}" "$BIN/tilefuse" bench "$P/$3.tfs" --no-check --no-baselines \
    --gemm-config "$4" --repeats 400 2>&1 | awk -v t="$3 $4 $2" '$1=="fused"{print t, $2, $3}'
}
for r in $(seq "$ROUNDS"); do
  for i in "${!CASES[@]}"; do
    if (( r % 2 )); then B "$i" base; B "$i" read; else B "$i" read; B "$i" base; fi
  done | tee -a "$L/times.txt"
  pack
done
if [[ -n "${GTESTS:-}" ]]; then
  timeout 200 "$BIN/test_gpu" --gtest_filter="$GTESTS" > "$L/tests.txt" 2>&1
  echo "tests rc $?" | tee -a "$L/checks.txt"; grep -E "PASSED|FAILED|SKIPPED|^\[ +(OK|FAILED) " "$L/tests.txt" | tail -12 | tee -a "$L/checks.txt"
  pack
fi
