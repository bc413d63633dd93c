#!/usr/bin/env bash
# Session 37: issue 15's eager bar with the interleaved timer (compare_torch.py's
# time_interleaved: eager and tilefuse's tuned choice called in alternation after the power
# state settled) and its bench ratios (fused and chosen against the cuBLASLt rows, in the same
# bench call), on the programs, tuned from an empty cache, most important first:
# moe_up_proj, the 8192^3 GEMM, the seed, gather_heavy, repeats, gemm_f16. About 450 s
# (TIME_LIMIT: start no program after it). Carry [".devcarry/bin"]. Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call17; mkdir -p "$L"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR="${TILEFUSE_CACHE_DIR:-/tmp/tf-cache-call17}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
P=bench/programs
TILEFUSE_LIBRARY="$BIN/libtilefuse.so" PYTHONPATH=python timeout 560 python3 bench/compare_torch.py \
  --no-compile --no-cross-check --tilefuse "$BIN/tilefuse" --time-limit "${TIME_LIMIT:-400}" \
  --json "$L/compare_torch.json" $P/moe_up_proj_bf16.tfs $P/gemm_bf16_8192.tfs \
  $P/seed_gather_mm_f16.tfs $P/gather_heavy_bf16.tfs $P/repeats_f16.tfs $P/gemm_f16.tfs \
  > "$L/compare_torch.txt" 2>&1
echo "rc $?" >> "$L/compare_torch.txt"
pack
tail -16 "$L/compare_torch.txt"
