#!/usr/bin/env bash
# fragment_no_allocate A/B on several index kinds; clocks and power under a sustained run.
# ~300 s. Logs under $OUT. See README.md.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache
IDX=/tmp/idx; mkdir -p "$IDX"
python3 bench/device-plans/mkidx.py "$IDX"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$OUT/gpu.txt"
B() { "$BIN/tilefuse" bench "$@" --no-check --no-baselines; }
declare -A PROG=([gather_heavy]=bench/programs/gather_heavy_bf16.tfs
                 [seed]=bench/programs/seed_gather_mm_f16.tfs
                 [moe]=bench/programs/moe_up_proj_bf16.tfs)
declare -A IN=([gather_heavy]=idx [seed]=index [moe]=idx)
declare -A CFG=([gather_heavy]=128x256x64/4/8/persistent/ra [seed]=128x256x64/3/8/ra
                [moe]=128x256x64/4/8/persistent/ra)
declare -A REP=([gather_heavy]=200 [seed]=200 [moe]=30)
# 1. no_allocate against the default: two interleaved rounds, every index kind.
for round in 1 2; do
  for p in gather_heavy seed moe; do
    kinds="random sorted arange"; [[ $p == moe ]] && kinds="random sorted routing"
    for k in $kinds; do
      f="$IDX/${p}_$k.npy"; [[ $k == routing ]] && f="$IDX/moe_routing.npy"
      for v in default na; do
        opt=(); [[ $v == na ]] && opt=(--cuda-option fragment_no_allocate=1)
        echo "== r$round $p $k $v" >> "$OUT/noalloc.txt"
        B "${PROG[$p]}" --input "${IN[$p]}=$f" --gemm-config "${CFG[$p]}" --repeats "${REP[$p]}" \
          "${opt[@]}" >> "$OUT/noalloc.txt" 2>&1
      done
    done
  done
done
# 2. The gh baselines (cuBLASLt on the ungathered operand) in the same call.
B_base() { "$BIN/tilefuse" bench "$@" --no-check; }
B_base bench/programs/gather_heavy_bf16.tfs --gemm-config 128x256x64/4/8/persistent/ra \
  --repeats 200 > "$OUT/gh_baselines.txt" 2>&1
# 3. Clocks and power during 20000 repeats of register_a, then of the plain kernel on the
#    materialized rows (the twin program: x already gathered).
for v in ra plain; do
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active \
    --format=csv -lms 100 > "$OUT/power_$v.csv" 2>&1 &
  smi=$!
  if [[ $v == ra ]]; then
    B bench/programs/gather_heavy_bf16.tfs --gemm-config 128x256x64/4/8/persistent/ra \
      --repeats 20000 > "$OUT/sustained_$v.txt" 2>&1
  else
    B bench/device-plans/twins/gh_plain.tfs --gemm-config 128x256x64/4/8/persistent --repeats 20000 \
      > "$OUT/sustained_$v.txt" 2>&1
  fi
  kill $smi
done
grep -h -A3 "^==" "$OUT/noalloc.txt" | head -200 > "$OUT/summary.txt"
