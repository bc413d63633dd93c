#!/usr/bin/env bash
# The producer's L2 prefetch of register_a's gathered rows (bench/device-plans/pf/mkpf.py,
# session 33: written and read in SASS, never run). The emitted persistent /ra256 kernels of
# gather_heavy and moe_up_proj, and their mkpf variants at D = 2, 4, 6 k-tiles past the
# producer's stage, by kernel override: first `run --check` (gather_heavy, against the f64
# oracle; a wrong barrier would hang or be wrong), then two interleaved rounds of bench
# (--no-baselines), then gather_heavy's baselines once. About 300 s.
# Here: `scripts/setup.sh && scripts/gpu_check.sh --stage`; device tool: command
# "bash bench/device-plans/call7.sh", carry [".devcarry/bin"]. Logs in $OUT/logs.tgz.
# Shorter: DS="2 4" ROUNDS=1 (the distances, and the rounds of bench).
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
DS="${DS:-2 4 6}"; ROUNDS="${ROUNDS:-2}"
L=/tmp/call7; P=/tmp/pf; rm -rf "$L" "$P"; mkdir -p "$L" "$P"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call7
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$L/gpu.txt"
cat "$L/gpu.txt"
C=128x256x64/4/8/persistent/ra256
declare -A PROG=([gh]=bench/programs/gather_heavy_bf16.tfs [moe]=bench/programs/moe_up_proj_bf16.tfs)
for p in gh moe; do
  "$BIN/tilefuse" emit "${PROG[$p]}" --stage cuda --target sm_90a --plan fused --gemm-config "$C" > "$P/$p.cu" 2>> "$L/emit.txt"
  for d in $DS; do
    mkdir -p "$P/${p}_d$d"
    python3 bench/device-plans/pf/mkpf.py "$P/$p.cu" "$P/${p}_d$d/gemm0.cu" "$d" >> "$L/emit.txt" 2>&1
  done
done
cp -r "$P" "$L/sources"
for d in $DS; do
  TILEFUSE_OVERRIDE_SOURCE="$P/gh_d$d" timeout 60 "$BIN/tilefuse" run "${PROG[gh]}" --device cuda \
    --plan fused --gemm-config "$C" --check -v > "$L/check_gh_d$d.txt" 2>&1
  echo "rc $? d$d" | tee -a "$L/check_gh_d$d.txt"; grep -E "check:|local" "$L/check_gh_d$d.txt"
done
pack
B() { # program variant repeats
  local over=(); [[ $2 != base ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$P/${1}_$2")
  timeout 90 "${over[@]}" "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines \
    --gemm-config "$C" --repeats "$3" 2>&1 | awk -v t="$1 $2" '$1=="fused"{print t, $2, $3}'
}
for r in $(seq "$ROUNDS"); do
  for v in base $(printf "d%s " $DS); do B gh $v 200 | tee -a "$L/times.txt"; done
  pack
  for v in base $(printf "d%s " $DS); do B moe $v 30 | tee -a "$L/times.txt"; done
  pack
done
timeout 60 "$BIN/tilefuse" bench "${PROG[gh]}" --no-check --gemm-config "$C" --repeats 200 \
  > "$L/gh_baselines.txt" 2>&1
grep -E "^(fused|cuBLASLt)" "$L/gh_baselines.txt"; pack
