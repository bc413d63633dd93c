#!/usr/bin/env bash
# Session 36: the wave quantization of 128x256 tiles at moe_up_proj (3584 tiles: 27.15 waves of
# 132, so 28 rounds) and at the 8192^3 GEMM (2048: 15.5 waves). Two interleaved rounds of bench
# --no-baselines: the persistent kernel against stream-K over 132 blocks (the whole waves round
# robin, the last wave's K iterations shared out); the unfused row is the plain GEMM on the
# materialized rows. About 150 s. Carry [".devcarry/bin"]. Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call11; mkdir -p "$L"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call11
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
declare -A PROG=([moe]=bench/programs/moe_up_proj_bf16.tfs [g8k]=bench/programs/gemm_bf16_8192.tfs)
B() { # program config repeats [cuda option]
  local opt=(); [[ -n ${4:-} ]] && opt=(--cuda-option "$4")
  timeout 90 "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines --gemm-config "$2" \
    --repeats "$3" "${opt[@]}" 2>&1 | awk -v t="$1 $2 ${4:-}" '$1=="fused"||$1=="unfused"{print t, $1, $2, $3}'
}
for r in 1 2; do
  for p in g8k moe; do
    B $p 128x256x64/3/8/persistent 30 | tee -a "$L/times.txt"
    B $p 128x256x64/3/8/streamk132 30 | tee -a "$L/times.txt"
    pack
  done
done
timeout 90 "$BIN/tilefuse" run "${PROG[g8k]}" --device cuda --gemm-config 128x256x64/3/8/streamk132 \
  --check > "$L/check.txt" 2>&1; echo "check rc $? $(grep check: "$L/check.txt")" | tee -a "$L/times.txt"
pack
