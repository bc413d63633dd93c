#!/usr/bin/env bash
# Session 44: (1) the session-43 fixes on the GPU (call36 part 1: integer comparisons with an
# out-of-range number, GpuUnreadIndex, GpuCases); (2) wg1/wgrate; (3) the split tail
# (tail/mktail.py): the tile's last T k-tiles issued as N half 0 of each, then N half 1 of each,
# so that half 0's epilogue slabs are stored while half 1's tail runs on the tensor pipe; the main
# loop in split form (split/mksplit.py: two m64n128 chains, which ptxas needs so as not to
# serialize every wgmma when the tail changes shape; C7511). Variants: 0 = as emitted, s = split
# only, tNs = tail of T k-tiles + split. run --check of each, ROUNDS interleaved bench rounds
# (fused row), then the cuBLASLt rows; (4) ping-pong at gather_heavy if time is left.
# Carry [".devcarry/bin", ".devcarry/wg1"]. Logs: $OUT/call37.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
ROUNDS="${ROUNDS:-2}"
L=/tmp/call37; P=/tmp/tail; rm -rf "$L" "$P"; mkdir -p "$L" "$P"
pack() { tar czf "$OUT/call37.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call37
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
# (1)
for p in bench/device-plans/call36/*.tfs; do
  n=$(basename "$p" .tfs)
  timeout 120 "$BIN/tilefuse" run "$p" --device cuda --check -v > "$L/fix_$n.txt" 2>&1
  echo "rc $? $p: $(grep -c ' ok$' "$L/fix_$n.txt") ok of $(grep -c 'check:' "$L/fix_$n.txt") checks" | tee -a "$L/summary.txt"
done
timeout 300 "$BIN/test_gpu" --gtest_filter='GpuUnreadIndex.*:GpuCases.*:GpuSplitTail.*' > "$L/test_gpu.txt" 2>&1
echo "rc $? test_gpu: $(grep -E '^\[  (PASSED|FAILED) ' "$L/test_gpu.txt" | tr '\n' ' ')" | tee -a "$L/summary.txt"
pack
# (2)
[[ -x .devcarry/wg1/wgrate ]] && timeout 60 .devcarry/wg1/wgrate 2>&1 | tee "$L/wgrate.txt"
pack
# (3)
declare -A PROG=([seedca]=bench/programs/seed_gather_mm_f16.tfs [g16]=bench/programs/gemm_f16.tfs
                 [ghca]=bench/programs/gather_heavy_bf16.tfs [seed]=bench/programs/seed_gather_mm_f16.tfs
                 [gh]=bench/programs/gather_heavy_bf16.tfs)
declare -A CONF=([seedca]=128x256x64/4/8 [g16]=128x256x32/8/8 [ghca]=128x256x64/4/8/persistent
                 [seed]=128x256x64/4/8/ra256 [gh]=128x256x64/4/8/persistent/ra256)
declare -A VARS=([seedca]="s t2s t4s" [g16]="s t4s t8s" [ghca]="s t2s" [seed]="s t2s t3s" [gh]="s t1s t2s t3s")
ORDER="${ORDER:-seedca seed g16 ghca gh}"
for p in $ORDER; do
  "$BIN/tilefuse" emit "${PROG[$p]}" --stage cuda --target sm_90a --plan fused --gemm-config "${CONF[$p]}" \
    > "$P/$p.cu" 2>> "$L/emit.txt"
  for v in ${VARS[$p]}; do
    mkdir -p "$P/${p}_$v"
    case $v in
      s) python3 bench/device-plans/split/mksplit.py "$P/$p.cu" "$P/${p}_$v/gemm0.cu" >> "$L/emit.txt" 2>&1 ;;
      t*s) T=${v#t}; T=${T%s}
           python3 bench/device-plans/tail/mktail.py "$P/$p.cu" "$P/$p.t$T.cu" "$T" >> "$L/emit.txt" 2>&1
           python3 bench/device-plans/split/mksplit.py "$P/$p.t$T.cu" "$P/${p}_$v/gemm0.cu" >> "$L/emit.txt" 2>&1 ;;
    esac
  done
done
cp -r "$P" "$L/sources"
for p in $ORDER; do
  for v in ${VARS[$p]}; do
    TILEFUSE_OVERRIDE_SOURCE="$P/${p}_$v" timeout 60 "$BIN/tilefuse" run "${PROG[$p]}" --device cuda \
      --plan fused --gemm-config "${CONF[$p]}" --check -v > "$L/check_${p}_$v.txt" 2>&1
    echo "rc $? $p $v: $(grep -E 'check:' "$L/check_${p}_$v.txt" | tail -1)" | tee -a "$L/checks.txt"
  done
done
# the compiler's split tail (--cuda-option split_tail=1, binaries at the call's commit)
for p in seedca g16 ghca seed gh; do
  timeout 60 "$BIN/tilefuse" run "${PROG[$p]}" --device cuda --plan fused --gemm-config "${CONF[$p]}" \
    --cuda-option split_tail=1 --check -v > "$L/check_${p}_compiler.txt" 2>&1
  echo "rc $? $p compiler split_tail: $(grep -E 'check:' "$L/check_${p}_compiler.txt" | tail -1) $(grep -c 'split tail' "$L/check_${p}_compiler.txt")" | tee -a "$L/checks.txt"
done
pack
B() { # program variant
  local over=(); [[ $2 != 0 ]] && over=(env "TILEFUSE_OVERRIDE_SOURCE=$P/${1}_$2")
  timeout 120 "${over[@]}" "$BIN/tilefuse" bench "${PROG[$1]}" --no-check --no-baselines \
    --gemm-config "${CONF[$1]}" --repeats 400 2>&1 | awk -v t="$1 $2" '$1=="fused"{print t, $2, $3}'
}
for r in $(seq "$ROUNDS"); do
  for p in $ORDER; do
    for v in 0 ${VARS[$p]}; do B "$p" "$v" | tee -a "$L/times.txt"; done
  done
  pack
done
for p in seedca g16 gh; do
  timeout 120 "$BIN/tilefuse" bench "${PROG[$p]}" --no-check --gemm-config "${CONF[$p]}" --repeats 400 \
    > "$L/${p}_baselines.txt" 2>&1
  echo "$p: $(awk '$1=="fused"{print "fused", $2, $3} /^cuBLASLt GEMM only  /{print "cuBLASLt", $4, $5}' "$L/${p}_baselines.txt" | tr '\n' ' ')" \
    | tee -a "$L/times.txt"
done
pack
# (4)
if [[ -z "${NO_PP:-}" ]]; then
  for c in 128x256x64/4/8/persistent/ra256 128x128x64/4/4/pingpong 128x128x64/5/4/pingpong; do
    timeout 120 "$BIN/tilefuse" bench bench/programs/gather_heavy_bf16.tfs --no-check --no-baselines \
      --gemm-config "$c" --repeats 400 2>&1 | awk -v t="pp $c" '$1=="fused"{print t, $2, $3}' | tee -a "$L/times.txt"
  done
  pack
fi
