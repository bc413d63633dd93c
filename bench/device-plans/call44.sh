#!/usr/bin/env bash
# Session 46: register_a's fragment loads as 16 32-bit loads a k-tile, unpredicated, each straight
# into wgmma's register order (CopyPlan::word_loads, option fragment_word_loads, off by default; both
# forms named) against the predicated 16-byte loads (fragment_word_loads=0), on gather_heavy
# (/persistent/ra256), the seed (/ra256), repeats (/persistent/ra) and moe_up_proj (/persistent/ra256:
# session 47 added it; its rounds take about 1 s each). (0) the register-A
# edge-program variants on the GPU; (1) run --check of each form; (2) ROUNDS interleaved bench
# rounds (fused row); (3) the cuBLASLt rows.
# (frag32/mkvar.py writes the hand-written forms, read in SASS first.) About 250 s. Carry [".devcarry/bin"]. Logs: $OUT/log.txt.
set -uo pipefail
BIN=.devcarry/bin; OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"; LOG="$OUT/log.txt"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call44
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$LOG"
[[ -e /work/main/tests ]] || { mkdir -p /work && ln -sfn "$PWD" /work/main; }
TILEFUSE_TEST_BINARY="$PWD/$BIN/tilefuse" timeout 90 "$BIN/test_gpu" \
  --gtest_filter='*fragment_word_loads*' > "$OUT/ra_tests.txt" 2>&1
echo "register_a tests rc $?: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/ra_tests.txt" | tr '\n' ' ')" | tee -a "$LOG"
declare -A PROG=([gh]=bench/programs/gather_heavy_bf16.tfs [seed]=bench/programs/seed_gather_mm_f16.tfs
                 [rep]=bench/programs/repeats_f16.tfs [moe]=bench/programs/moe_up_proj_bf16.tfs)
declare -A CONF=([gh]=128x256x64/4/8/persistent/ra256 [seed]=128x256x64/4/8/ra256
                 [rep]=128x256x64/4/8/persistent/ra [moe]=128x256x64/4/8/persistent/ra256)
ORDER="${ORDER:-gh seed rep moe}"; ROUNDS="${ROUNDS:-3}"
FORMS="w0 w1"
opt() { echo "--cuda-option fragment_word_loads=${1#w}"; }
for p in $ORDER; do [[ $p == moe ]] && continue; for f in $FORMS; do  # (moe's f64 oracle is minutes)
  timeout 60 "$BIN/tilefuse" run "${PROG[$p]}" --device cuda --plan fused --gemm-config "${CONF[$p]}" \
    $(opt $f) --check 2>&1 | grep -E "check:|rror" | sed "s|^|$p $f: |" | tee -a "$LOG"
done; done
B() {
  timeout 40 "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines --gemm-config "${CONF[$1]}" \
    $(opt $2) --repeats 300 2>&1 | awk -v t="$1 $2" '$1=="fused"{print t, $2, $3} /rror/{print t, $0}'
}
for r in $(seq "$ROUNDS"); do
  for p in $ORDER; do for f in $FORMS; do B "$p" "$f" | tee -a "$LOG"; done; done
done
for p in $ORDER; do
  timeout 40 "$BIN/tilefuse" bench "${PROG[$p]}" --no-check --gemm-config "${CONF[$p]}" --repeats 200 2>&1 \
    | awk -v p=$p '/^cuBLASLt GEMM only  /{print p, "cuBLASLt", $4, $5}' | tee -a "$LOG"
done
