#!/usr/bin/env bash
# Session 36: (1) mma.sync tiles that are not powers of two on the GPU (--cuda-option wgmma=0:
# 192x128x32/3/8 and 128x192x64/3/8, run --check on gather_heavy and the seed; 40 s); (2)
# issue 15's eager bar on the two programs that failed it in session 23: moe_up_proj and
# gemm_bf16_8192 tuned from an empty cache, then compare_torch --no-compile --no-cross-check on
# both (eager and tilefuse's choice timed by the same do_bench too). About 350 s. Carry
# [".devcarry/bin"]. Logs: $OUT/logs.tgz after every step.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call12; mkdir -p "$L"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call12
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
for p in gather_heavy_bf16 seed_gather_mm_f16; do
  for c in 192x128x32/3/8 128x192x64/3/8; do
    timeout 60 "$BIN/tilefuse" run bench/programs/$p.tfs --device cuda --gemm-config "$c" \
      --cuda-option wgmma=0 --check > "$L/check.txt" 2>&1
    echo "$p $c wgmma=0 rc $? $(grep -E 'check:' "$L/check.txt" | tr '\n' ' ')" | tee -a "$L/checks.txt"
  done
done
pack
for b in moe_up_proj_bf16 gemm_bf16_8192; do
  timeout 150 "$BIN/tilefuse" tune bench/programs/$b.tfs > "$L/tune_$b.txt" 2>&1
  echo "rc $?" >> "$L/tune_$b.txt"; tail -2 "$L/tune_$b.txt"; pack
done
TILEFUSE_LIBRARY="$BIN/libtilefuse.so" PYTHONPATH=python timeout 300 python3 bench/compare_torch.py \
  --no-compile --no-cross-check --tilefuse "$BIN/tilefuse" bench/programs/moe_up_proj_bf16.tfs \
  bench/programs/gemm_bf16_8192.tfs > "$L/compare_torch.txt" 2>&1
echo "rc $?" >> "$L/compare_torch.txt"; tail -12 "$L/compare_torch.txt"; pack
