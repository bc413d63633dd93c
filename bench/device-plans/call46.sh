#!/usr/bin/env bash
# Session 49: (1) call22.sh (issue 15's programs tuned from an empty cache, bench with every row in
# alternation, then compare_torch on the same cache); (2) the seed's one-tile configs with and
# without the split tail, register A against cp.async, each in one bench call with its cuBLASLt
# row timed in alternation, ROUNDS rounds. About 420 s. Carry [".devcarry/bin"].
# Logs: $OUT/c20/logs.tgz, $OUT/c17/logs.tgz, $OUT/seed.txt.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"; OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/seed.txt"
if [[ "${CALL22:-1}" == 1 ]]; then  # CALL22=0: the seed's configs only (about 100 s)
  OUT="$OUT" CT_LIMIT="${CT_LIMIT:-150}" bash bench/device-plans/call22.sh > "$OUT/call22.txt" 2>&1
  tail -40 "$OUT/call22.txt"
fi
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call46
P=bench/programs/seed_gather_mm_f16.tfs
for r in $(seq "${ROUNDS:-2}"); do
  for c in 128x256x64/4/8/ra256 128x256x64/4/8/ra256/tail3 128x256x64/4/8 128x256x64/4/8/tail3; do
    timeout 60 "$BIN/tilefuse" bench "$P" --no-check --gemm-config "$c" --repeats 300 2>&1 \
      | awk -v c="$c" '$1=="fused"{f=$2} /^cuBLASLt GEMM only  /{b=$4} /rror/{print c, $0}
                       END{if (f && b) printf "%s fused %s cuBLASLt %s ratio %.3f\n", c, f, b, f/b}' \
      | tee -a "$OUT/seed.txt"
  done
done
