#!/usr/bin/env bash
# Session 37: is our plain GEMM's gap to PyTorch's cuBLAS at moe_up_proj's shape (8192x4096 @
# 4096x14336 bf16) cycles or clocks? ncu (session 31) put our kernel within 1.5% of cuBLAS's in
# cycles in one launch, while by one timer eager is 11% faster. Each side runs a sustained loop
# (REPEATS calls, L2 flushed before each, the same method for both) while nvidia-smi samples the
# SM clock, the instant power and the clock-event reasons every 20 ms. The 8192^3 GEMM, where we
# are level with eager, is the control. Two interleaved rounds. About 150 s. Carry
# [".devcarry/bin"]. Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call16; mkdir -p "$L"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call16
REPEATS="${REPEATS:-1500}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE > "$L/smi_q.txt" 2>&1
cat > "$L/moe_plain.tfs" <<'TFS'
# moe_up_proj's GEMM on the materialized rows
def moe_plain(x: bf16[8192, 4096], w: bf16[4096, 14336]):
    return x @ w
TFS
# (older drivers name the fields power.draw and clocks_throttle_reasons.active)
FIELDS=clocks.sm,power.draw.instant,clocks_event_reasons.active,temperature.gpu
nvidia-smi --query-gpu=$FIELDS --format=csv,noheader > /dev/null 2>&1 ||
  FIELDS=clocks.sm,power.draw,clocks_throttle_reasons.active,temperature.gpu
echo "fields: $FIELDS" | tee -a "$L/gpu.txt"
# Samples while "$@" runs: SM MHz, instant W, the share of samples with the SW power cap
# (event-reason bit 0x4) and with any thermal reason (0x20 | 0x40), the GPU temperature.
S() {
  local tag=$1; shift
  nvidia-smi --query-gpu=$FIELDS --format=csv,noheader,nounits -lms 20 > "$L/smi_$tag.txt" 2>&1 &
  local smi=$!
  local t
  t=$("$@" 2>&1 | tr '\n' ' ')
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  echo "$tag: $t| $(python3 - "$L/smi_$tag.txt" <<'PY'
import sys
rows = []
for line in open(sys.argv[1]):
    p = [s.strip() for s in line.split(",")]
    try:
        rows.append((float(p[0]), float(p[1]), int(p[2], 16), float(p[3])))
    except (ValueError, IndexError):
        pass
busy = [r for r in rows if r[1] > 300]
if not busy:
    print("no samples over 300 W")
else:
    n = len(busy)
    print(f"{sum(r[0] for r in busy)/n:.0f} MHz {sum(r[1] for r in busy)/n:.0f} W "
          f"max {max(r[1] for r in busy):.0f} W, power cap {sum(1 for r in busy if r[2] & 4)/n:.0%}, "
          f"thermal {sum(1 for r in busy if r[2] & 0x60)/n:.0%}, {max(r[3] for r in busy):.0f} C "
          f"({n} samples over 300 W)")
PY
)"
}
ours() { # tfs config
  "$BIN/tilefuse" bench "$1" --no-check --no-baselines --gemm-config "$2" --repeats "$REPEATS" \
    | awk '$1=="fused"{print "ours " $2 " us"}'
}
for r in 1 2; do
  S "moe_torch_r$r" python3 bench/device-plans/sustain_torch.py 8192 4096 14336 "$REPEATS"
  S "moe_ours_r$r" ours "$L/moe_plain.tfs" 128x256x64/4/8/persistent
  S "g8k_torch_r$r" python3 bench/device-plans/sustain_torch.py 8192 8192 8192 "$REPEATS"
  S "g8k_ours_r$r" ours bench/programs/gemm_bf16_8192.tfs 128x256x64/4/8/persistent
  pack
done 2>&1 | tee "$L/times.txt"
pack
