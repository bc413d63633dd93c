#!/usr/bin/env bash
# Session 42: the block timeline in SM cycles (bench/device-plans/cyc/mkcyc.py: %clock64 for
# %globaltimer, a kernel override of the emitted timeline kernel) beside the real one, for the
# seed, gemm_f16, gather_heavy and the 8192^3 GEMM at their tuned configs: the SM clock under
# bench's flushed loop, and each main loop's cycles against the tensor pipe's 1024 a 128x256x64
# k-tile. ROUNDS interleaved rounds (ns, then cycles). About 120 s. Carry [".devcarry/bin"].
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
ROUNDS="${ROUNDS:-2}"
L=/tmp/call33; P=/tmp/cyc; rm -rf "$L" "$P"; mkdir -p "$L" "$P"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call33
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
declare -A PROG=([seedca]=bench/programs/seed_gather_mm_f16.tfs [seed]=bench/programs/seed_gather_mm_f16.tfs
                 [g16]=bench/programs/gemm_f16.tfs [g16b]=bench/programs/gemm_f16.tfs
                 [gh]=bench/programs/gather_heavy_bf16.tfs [ghca]=bench/programs/gather_heavy_bf16.tfs
                 [g8k]=bench/programs/gemm_bf16_8192.tfs)
declare -A CONF=([seedca]=128x256x64/4/8 [seed]=128x256x64/4/8/ra256 [g16]=128x256x64/4/8
                 [g16b]=128x256x32/8/8 [gh]=128x256x64/4/8/persistent/ra256
                 [ghca]=128x256x64/4/8/persistent [g8k]=128x256x32/5/8/persistent)
declare -A REPS=([seedca]=300 [seed]=300 [g16]=300 [g16b]=300 [gh]=300 [ghca]=300 [g8k]=10)
ORDER="${ORDER:-seedca seed g16 g16b gh ghca g8k}"
for p in $ORDER; do
  mkdir -p "$P/$p"
  "$BIN/tilefuse" emit "${PROG[$p]}" --stage cuda --target sm_90a --plan fused --gemm-config "${CONF[$p]}" \
    --cuda-option block_timeline=1 > "$P/$p.cu" 2>> "$L/emit.txt"
  python3 bench/device-plans/cyc/mkcyc.py "$P/$p.cu" "$P/$p/gemm0.cu" >> "$L/emit.txt" 2>&1
done
B() { # program kind(ns|cyc)
  local over=(); [[ $2 == cyc ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$P/$1")
  timeout 120 "${over[@]}" "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines \
    --cuda-option block_timeline=1 --gemm-config "${CONF[$1]}" --repeats "${REPS[$1]}" 2>&1 \
    | awk -v t="$1 $2" '$1=="fused"{f=$2} /timeline fused\/gemm0/{sub(/^ +/, ""); print t, "fused", f, "|", $0}'
}
for r in $(seq "$ROUNDS"); do
  for p in $ORDER; do
    B "$p" ns | tee -a "$L/times.txt"; B "$p" cyc | tee -a "$L/times.txt"
  done
  pack
done
