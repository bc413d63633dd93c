#!/usr/bin/env bash
# Session 38, the closing call: (1) the GPU tests of bench (GTESTS, a gtest filter: the rows'
# shared inputs); (2) compare_torch with the GPU hold on the short programs whose interleaved row
# read the host's rate in call 22 (seed; gemm_f16 and gather_heavy as controls), tuned from an
# empty cache; (3) the peers at the seed and gather_heavy (anchor_shapes.py: eager, cuBLAS on the
# ungathered operand, the hand-written Triton kernel, one process each) and our block timeline
# at the tuned configs (where a one-wave block's time goes: ramp, main loop, epilogue).
# About 330 s. Carry [".devcarry/bin", ".devcarry/peers"] (cp ../shared/bench/peers/*.py .devcarry/peers/). Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call23; mkdir -p "$L"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call23
export TILEFUSE_TEST_BINARY="$PWD/$BIN/tilefuse"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
timeout 150 "$BIN/test_gpu" --gtest_filter="${GTESTS:-TuneGpu.Bench*}" > "$L/tests.txt" 2>&1
echo "tests rc $?" | tee -a "$L/checks.txt"; grep -E "PASSED|FAILED|SKIPPED" "$L/tests.txt" | tee -a "$L/checks.txt"
pack
P=bench/programs
TILEFUSE_LIBRARY="$BIN/libtilefuse.so" PYTHONPATH=python timeout 200 python3 bench/compare_torch.py \
  --no-compile --no-cross-check --tilefuse "$BIN/tilefuse" --time-limit 150 \
  --json "$L/compare_torch.json" $P/seed_gather_mm_f16.tfs $P/gemm_f16.tfs $P/gather_heavy_bf16.tfs \
  > "$L/compare_torch.txt" 2>&1
echo "rc $?" >> "$L/compare_torch.txt"; grep -E "interleaved|^(seed|gemm|gather)" "$L/compare_torch.txt" | cut -c1-400
grep -h '"interleaved_timer"' "$L/compare_torch.json" | head -3
pack
PEERS=.devcarry/peers  # a copy of ../shared/bench/peers (carry it: the device gets no ../shared)
[[ -d $PEERS ]] || PEERS=../shared/bench/peers
for shape in "f16 2048 2048 2048 2048" "bf16 16384 1024 1024 16384"; do
  timeout 90 python3 "$PEERS/anchor_shapes.py" $shape 2>&1 | grep -E '"mode"' | tee -a "$L/peers.txt"
done
pack
for pc in "seed_gather_mm_f16 128x256x64/4/8" "gemm_f16 128x256x64/4/8" "gather_heavy_bf16 128x256x64/4/8/persistent/ra256"; do
  set -- $pc
  timeout 60 "$BIN/tilefuse" bench "$P/$1.tfs" --no-check --no-baselines --gemm-config "$2" \
    --cuda-option block_timeline=1 --repeats 200 > "$L/timeline_$1.txt" 2>&1
  echo "== $1 $2"; grep -vE "^\s*$" "$L/timeline_$1.txt" | grep -iE "^fused|phase|block|ramp|loop|epilog" | head -12
done
pack
