#!/usr/bin/env bash
# The seed's index-latency bound (session 34): the emitted seed `128x256x64/3/8/ra256` kernel
# against noidx.py's copy of it (fragment rows `cse + i`, not `index[cse + i]`; wrong results,
# --no-check), two interleaved rounds of `tilefuse bench` with baselines. If the copy runs at the
# plain twin's time, the seed's remaining gap to cuBLAS is the index's dependent latency. About
# 40 s. Logs in $L (default /tmp/seed_bound), packed into $PACK when set.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
L="${L:-/tmp/seed_bound}"; mkdir -p "$L/noidx"
export TILEFUSE_CACHE_DIR="${TILEFUSE_CACHE_DIR:-/tmp/tf-cache-seed-bound}"
S=bench/programs/seed_gather_mm_f16.tfs C=128x256x64/3/8/ra256
"$BIN/tilefuse" emit "$S" --stage cuda --target sm_90a --plan fused --gemm-config "$C" > "$L/seed.cu"
python3 bench/device-plans/noidx.py "$L/seed.cu" "$L/noidx/gemm0.cu"
for r in 1 2; do
  for v in base noidx; do
    over=(); [[ $v != base ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$L/noidx")
    timeout 60 "${over[@]}" "$BIN/tilefuse" bench "$S" --no-check --gemm-config "$C" --repeats 200 \
      2>&1 | awk -v t="seed $v" '$1=="fused"{print t, $1, $2, $3} $1=="cuBLASLt"{print t, $1, $4, $5}' | tee -a "$L/seed_times.txt"
  done
  [[ -n ${PACK:-} ]] && tar czf "$PACK" -C "$L" .
done
