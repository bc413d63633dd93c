#!/usr/bin/env bash
# Session 41: does a lag of the second MMA warpgroup (lag/mklag.py) hold across tiles? gather_heavy's
# 128x256x64/4/8/persistent/ra256 kernel with the block timeline (--cuda-option block_timeline=1),
# thread 0's (warpgroup 0's) and thread 128's (warpgroup 1's, `wg1`) first two main-loop ends, at
# no lag, a lag of 2 k-tiles set once, and a lag of 2 enforced at every tile (`every`). Then the
# `every` forms at L = 1, 2, 3 timed against the kernel as emitted, ROUNDS interleaved rounds.
# Then each one-wave program's kernel (and gather_heavy's) with its last TMA-store wait for the reads
# only (`read`), against the kernel as emitted.
# About 150 s; shorter: ROUNDS=2 TL_ROUNDS=1 TL_VARS="t0 t0w1 t2 t2w1" EVARS=e2 (about 100 s). Carry [".devcarry/bin"]. Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
ROUNDS="${ROUNDS:-3}"
L=/tmp/call31; P=/tmp/lag31; rm -rf "$L" "$P"; mkdir -p "$L" "$P"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call31
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
G=bench/programs/gather_heavy_bf16.tfs; C=128x256x64/4/8/persistent/ra256
TL=(--cuda-option block_timeline=1)
"$BIN/tilefuse" emit "$G" --stage cuda --target sm_90a --plan fused --gemm-config "$C" > "$P/gh.cu"
"$BIN/tilefuse" emit "$G" --stage cuda --target sm_90a --plan fused --gemm-config "$C" "${TL[@]}" > "$P/ght.cu"
mk() { mkdir -p "$P/$1"; python3 bench/device-plans/lag/mklag.py "$P/$2" "$P/$1/gemm0.cu" "${@:3}"; }
mk t0w1 ght.cu 0 wg1; mk t2 ght.cu 2; mk t2w1 ght.cu 2 wg1; mk t2e ght.cu 2 every; mk t2ew1 ght.cu 2 every wg1
mk e1 gh.cu 1 every; mk e2 gh.cu 2 every; mk e3 gh.cu 3 every
S=bench/programs/seed_gather_mm_f16.tfs; SC=128x256x64/4/8/ra256
F=bench/programs/gemm_f16.tfs; FC=128x256x32/8/8
"$BIN/tilefuse" emit "$S" --stage cuda --target sm_90a --plan fused --gemm-config "$SC" > "$P/seed.cu"
"$BIN/tilefuse" emit "$F" --stage cuda --target sm_90a --plan fused --gemm-config "$FC" > "$P/g16.cu"
mk rd gh.cu 0 read; mk seed_rd seed.cu 0 read; mk g16_rd g16.cu 0 read
cp -r "$P" "$L/sources"
for v in ${EVARS:-e1 e2 e3} rd; do
  TILEFUSE_OVERRIDE_SOURCE="$P/$v" timeout 60 "$BIN/tilefuse" run "$G" --device cuda --plan fused \
    --gemm-config "$C" --check -v $([[ $v == t* ]] && echo "${TL[@]}") > "$L/check_$v.txt" 2>&1
  echo "rc $? $v: $(grep -E 'check:' "$L/check_$v.txt" | tail -1)" | tee -a "$L/checks.txt"
done
pack
T() { # variant (t0 = the emitted timeline kernel)
  local over=(); [[ $1 != t0 ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$P/$1")
  timeout 120 "${over[@]}" "$BIN/tilefuse" bench "$G" --no-check --no-baselines --gemm-config "$C" \
    --repeats 400 "${TL[@]}" > "$L/tl_$1.txt" 2>&1
  echo "$1: $(awk '$1=="fused"{print $2, $3}' "$L/tl_$1.txt") $(grep -E 'timeline|first main loop' "$L/tl_$1.txt" | head -1 | sed 's/^ *//' | cut -c1-600)" | tee -a "$L/phases.txt"
}
for r in $(seq "${TL_ROUNDS:-2}"); do for v in ${TL_VARS:-t0 t0w1 t2 t2w1 t2e t2ew1}; do T $v; done; done
pack
B() {
  local over=(); [[ $1 != base ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$P/$1")
  timeout 120 "${over[@]}" "$BIN/tilefuse" bench "$G" --no-check --no-baselines --gemm-config "$C" \
    --repeats 400 2>&1 | awk -v t="$1" '$1=="fused"{print t, $2, $3}'
}
for r in $(seq "$ROUNDS"); do for v in base ${EVARS:-e1 e2 e3} rd; do B $v | tee -a "$L/times.txt"; done; done
pack
TILEFUSE_OVERRIDE_SOURCE="$P/seed_rd" timeout 60 "$BIN/tilefuse" run "$S" --device cuda --plan fused \
  --gemm-config "$SC" --check > "$L/check_seed_rd.txt" 2>&1; echo "rc $? seed_rd $(tail -1 "$L/check_seed_rd.txt")" | tee -a "$L/checks.txt"
TILEFUSE_OVERRIDE_SOURCE="$P/g16_rd" timeout 60 "$BIN/tilefuse" run "$F" --device cuda --plan fused \
  --gemm-config "$FC" --check > "$L/check_g16_rd.txt" 2>&1; echo "rc $? g16_rd $(tail -1 "$L/check_g16_rd.txt")" | tee -a "$L/checks.txt"
B2() { # program config variant
  local over=(); [[ $3 != base ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$P/$3")
  timeout 120 "${over[@]}" "$BIN/tilefuse" bench "$1" --no-check --no-baselines --gemm-config "$2" \
    --repeats 400 2>&1 | awk -v t="$3" '$1=="fused"{print t, $2, $3}'
}
for r in $(seq "$ROUNDS"); do
  for v in base seed_rd; do B2 "$S" "$SC" "$v" | sed 's/^base/seed_base/' | tee -a "$L/times.txt"; done
  for v in base g16_rd; do B2 "$F" "$FC" "$v" | sed 's/^base/g16_base/' | tee -a "$L/times.txt"; done
done
pack
