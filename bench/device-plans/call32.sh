#!/usr/bin/env bash
# Session 42: the gathered source's leading bytes prefetched into L2 at the kernel's entry, before
# the index lands (bench/device-plans/pre/mkpre.py, hand-written overrides of each emitted kernel).
# (1) run --check of each variant against the f64 oracle, the compiles in parallel.
# (2) ROUNDS interleaved rounds of bench --no-baselines (fused row), base and variants.
# (3) Each program's cuBLASLt row, in the same call. (4) CORRECT=1: the compiler form (option
# source_prefetch, branch source-prefetch) on the GPU: its ws edge-program variants and run --check.
# (4) and the `cc` rows need that branch's binaries (session 42 ran them so; the compiler form was
# dropped on these numbers, bench/RESULTS.md): with main's, run CORRECT=0 and drop `cc`.
# About 300 s. Carry [".devcarry/bin"]. Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
ROUNDS="${ROUNDS:-3}"
L=/tmp/call32; P=/tmp/pre; rm -rf "$L" "$P"; mkdir -p "$L" "$P"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call32
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
declare -A PROG=([seed]=bench/programs/seed_gather_mm_f16.tfs [seedca]=bench/programs/seed_gather_mm_f16.tfs
                 [gh]=bench/programs/gather_heavy_bf16.tfs [rep]=bench/programs/repeats_f16.tfs)
declare -A CONF=([seed]=128x256x64/4/8/ra256 [seedca]=128x256x64/4/8
                 [gh]=128x256x64/4/8/persistent/ra256 [rep]=128x256x64/4/8/persistent/ra)
declare -A VARS=([seed]="lsu256 lsu512 bulk512" [seedca]="lsu256 lsu512 bulk512"
                 [gh]="lsu128 lsu256 bulk512" [rep]="lsu256 lsu512")
REPS="${REPS:-400}"
ORDER="${ORDER:-seed gh seedca rep}"
for p in $ORDER; do
  "$BIN/tilefuse" emit "${PROG[$p]}" --stage cuda --target sm_90a --plan fused --gemm-config "${CONF[$p]}" \
    > "$P/$p.cu" 2>> "$L/emit.txt"
  for v in ${VARS[$p]}; do
    mkdir -p "$P/${p}_$v"
    python3 bench/device-plans/pre/mkpre.py "$P/$p.cu" "$P/${p}_$v/gemm0.cu" "$v" >> "$L/emit.txt" 2>&1
  done
done
cp -r "$P" "$L/sources"
chk() { # program variant
  local over=(); [[ $2 != base ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$P/${1}_$2")
  timeout 120 "${over[@]}" "$BIN/tilefuse" run "${PROG[$1]}" --device cuda \
    --plan fused --gemm-config "${CONF[$1]}" --check -v > "$L/check_${1}_$2.txt" 2>&1
  echo "rc $? $1 $2: $(grep -E 'check:|max_rel|rel_err' "$L/check_${1}_$2.txt" | tail -1)" >> "$L/checks.txt"
}
for p in $ORDER; do
  for v in base ${VARS[$p]}; do chk "$p" "$v" & done
done
wait
cat "$L/checks.txt"
pack
B() { # program variant (cc: the compiler's form, --cuda-option source_prefetch=1)
  local over=() opt=(); [[ $2 != base && $2 != cc ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$P/${1}_$2")
  [[ $2 == cc ]] && opt=(--cuda-option source_prefetch=1)
  timeout 120 "${over[@]}" "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines "${opt[@]}" \
    --gemm-config "${CONF[$1]}" --repeats "$REPS" 2>&1 | awk -v t="$1 $2" '$1=="fused"{print t, $2, $3}'
}
for r in $(seq "$ROUNDS"); do
  for p in $ORDER; do
    for v in base ${VARS[$p]} cc; do B "$p" "$v" | tee -a "$L/times.txt"; done
  done
  pack
done
for p in $ORDER; do
  [[ $p == seedca ]] && continue
  timeout 120 "$BIN/tilefuse" bench "${PROG[$p]}" --no-check --gemm-config "${CONF[$p]}" --repeats "$REPS" \
    > "$L/${p}_baselines.txt" 2>&1
  echo "$p: $(awk '$1=="fused"{print "fused", $2, $3} /^cuBLASLt GEMM only  /{print "cuBLASLt", $4, $5}' "$L/${p}_baselines.txt" | tr '\n' ' ')" \
    | tee -a "$L/times.txt"
done
pack
# (4) The compiler's form (branch source-prefetch, option source_prefetch): the warp-specialized
# edge programs in its two variants against the f64 oracle, and run --check of the bench programs.
if [[ "${CORRECT:-1}" == 1 ]]; then
  [[ -e /work/main/tests ]] || { mkdir -p /work && ln -sfn "$PWD" /work/main; }
  export TILEFUSE_TEST_BINARY="$BIN/tilefuse"
  timeout 240 "$BIN/test_gpu" --gtest_filter='GpuWarpSpecialized/*source_prefetch*' > "$L/ws_sp.txt" 2>&1
  echo "ws source_prefetch rc $?: $(grep -E '^\[  (PASSED|FAILED) ' "$L/ws_sp.txt" | tr '\n' ' ')" | tee -a "$L/checks.txt"
  for p in $ORDER; do
    timeout 120 "$BIN/tilefuse" run "${PROG[$p]}" --device cuda --plan fused --gemm-config "${CONF[$p]}" \
      --cuda-option source_prefetch=1 --check -v > "$L/spcheck_$p.txt" 2>&1
    echo "rc $? $p source_prefetch=1: $(grep -E 'check:|max_rel|rel_err' "$L/spcheck_$p.txt" | tail -1)" | tee -a "$L/checks.txt"
  done
  pack
fi
