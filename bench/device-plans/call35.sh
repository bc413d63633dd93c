#!/usr/bin/env bash
# Session 43: (1) wg1/wgrate: one warpgroup's wgmma stream alone against two, one m64n256 chain
# against two m64n128 chains (needs .devcarry/wg1/wgrate, built here by nvcc). (2) split/mksplit.py:
# each warpgroup's m64n256 wgmma as two m64n128 chains (`s`), and with lag/mklag.py's lag of L
# k-tiles after it (`sL`), as kernel overrides of the emitted kernels; run --check of each variant,
# then ROUNDS interleaved rounds of bench --no-baselines (fused row), then each program's cuBLASLt
# row once. About 300 s. Carry [".devcarry/bin", ".devcarry/wg1"]. Logs: $OUT/logs.tgz.
# Where a gain can come from: in a persistent kernel a lag lets one warpgroup's epilogue overlap the
# other's wgmma (session 41's lag bought nothing, perhaps because one m64n256 chain alone leaves
# the pipe half idle: wgrate answers that first). In a one-wave kernel (the seed, gemm_f16) the last
# warpgroup's epilogue stays after all the tensor work, lag or not: there only `s` can differ.
# Shorter: ROUNDS=2 ORDER="gh rep seed". Prepared in session 43; no machine came for it.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
ROUNDS="${ROUNDS:-3}"
L=/tmp/call35; P=/tmp/split; rm -rf "$L" "$P"; mkdir -p "$L" "$P"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call35
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
if [[ -x .devcarry/wg1/wgrate && -z "${NO_RATE:-}" ]]; then
  .devcarry/wg1/wgrate 2>&1 | tee "$L/wgrate.txt"
fi
pack
declare -A PROG=([gh]=bench/programs/gather_heavy_bf16.tfs [seed]=bench/programs/seed_gather_mm_f16.tfs
                 [seedca]=bench/programs/seed_gather_mm_f16.tfs [g16]=bench/programs/gemm_f16.tfs
                 [rep]=bench/programs/repeats_f16.tfs)
declare -A CONF=([gh]=128x256x64/4/8/persistent/ra256 [seed]=128x256x64/4/8/ra256
                 [seedca]=128x256x64/4/8 [g16]=128x256x32/8/8 [rep]=128x256x64/4/8/persistent/ra)
declare -A VARS=([gh]="s s1 s2 l2" [seed]="s s2" [seedca]="s" [g16]="s s4" [rep]="s s2")
declare -A REPS=([gh]=400 [seed]=400 [seedca]=400 [g16]=400 [rep]=400)
ORDER="${ORDER:-gh rep seed g16 seedca}"
for p in $ORDER; do
  "$BIN/tilefuse" emit "${PROG[$p]}" --stage cuda --target sm_90a --plan fused --gemm-config "${CONF[$p]}" \
    > "$P/$p.cu" 2>> "$L/emit.txt"
  python3 bench/device-plans/split/mksplit.py "$P/$p.cu" "$P/$p.split.cu" >> "$L/emit.txt" 2>&1
  for v in ${VARS[$p]}; do
    mkdir -p "$P/${p}_$v"
    case $v in
      s) cp "$P/$p.split.cu" "$P/${p}_$v/gemm0.cu" ;;
      s*) python3 bench/device-plans/lag/mklag.py "$P/$p.cu" "$P/$p.lag.cu" "${v#s}" >> "$L/emit.txt" 2>&1
          python3 bench/device-plans/split/mksplit.py "$P/$p.lag.cu" "$P/${p}_$v/gemm0.cu" >> "$L/emit.txt" 2>&1 ;;
      l*) python3 bench/device-plans/lag/mklag.py "$P/$p.cu" "$P/${p}_$v/gemm0.cu" "${v#l}" >> "$L/emit.txt" 2>&1 ;;
    esac
  done
done
cp -r "$P" "$L/sources"
for p in $ORDER; do
  for v in ${VARS[$p]}; do
    TILEFUSE_OVERRIDE_SOURCE="$P/${p}_$v" timeout 60 "$BIN/tilefuse" run "${PROG[$p]}" --device cuda \
      --plan fused --gemm-config "${CONF[$p]}" --check -v > "$L/check_${p}_$v.txt" 2>&1
    echo "rc $? $p $v: $(grep -E 'check:|max_rel|rel_err' "$L/check_${p}_$v.txt" | tail -1)" | tee -a "$L/checks.txt"
  done
done
pack
B() { # program variant
  local over=(); [[ $2 != 0 ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$P/${1}_$2")
  timeout 120 "${over[@]}" "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines \
    --gemm-config "${CONF[$1]}" --repeats "${REPS[$1]}" 2>&1 | awk -v t="$1 $2" '$1=="fused"{print t, $2, $3}'
}
for r in $(seq "$ROUNDS"); do
  for p in $ORDER; do
    for v in 0 ${VARS[$p]}; do B "$p" "$v" | tee -a "$L/times.txt"; done
  done
  pack
done
for p in $ORDER; do
  timeout 120 "$BIN/tilefuse" bench "${PROG[$p]}" --no-check --gemm-config "${CONF[$p]}" --repeats "${REPS[$p]}" \
    > "$L/${p}_baselines.txt" 2>&1
  echo "$p: $(awk '$1=="fused"{print "fused", $2, $3} /^cuBLASLt GEMM only  /{print "cuBLASLt", $4, $5}' "$L/${p}_baselines.txt" | tr '\n' ' ')" \
    | tee -a "$L/times.txt"
done
pack
