#!/usr/bin/env bash
# Issue 12's bandwidth round in one device call: the GPU tests that bear on it, the bench of
# pointcloud_gather (tuned now, with the copy bandwidth and each row's share of it), the same on
# a sorted index, and the hand-written Triton kernel on both indices (bench/peer_gather_inputs.py).
#
#   bench/bandwidth_round.sh BIN PEERS [PROGRAMS_DIR]
#
# BIN holds tilefuse, test_gpu and test_runtime (built here, staged); PEERS is
# ../shared/bench/peers (or a copy); PROGRAMS_DIR defaults to bench/programs next to this script.
# Logs and the tuning cache go under $OUT (or /tmp/bw-round); a short summary is printed last.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN="$1"; PEERS="$2"; PROGS="${3:-$HERE/programs}"
OUTD="${OUT:-/tmp/bw-round}"; mkdir -p "$OUTD"
export TILEFUSE_CACHE_DIR=/tmp/bw-cache TILEFUSE_TEST_BINARY="$BIN/tilefuse"
rm -rf /tmp/bw-cache
P="$PROGS/pointcloud_gather_f16.tfs"
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
"$BIN/tilefuse" bench "$P" --save-inputs /tmp/bw-in > "$OUTD/bench_pointcloud.txt" 2>&1
el "bench pointcloud (tuned now): rc=$?"
cat "$OUTD/bench_pointcloud.txt"
python3 "$HERE/peer_gather_inputs.py" /tmp/bw-in --peers "$PEERS" --sorted-out /tmp/bw-sorted \
  > "$OUTD/peer.jsonl" 2>&1
el "Triton hoisted on tilefuse's inputs: rc=$?"; cat "$OUTD/peer.jsonl"
"$BIN/tilefuse" bench "$P" --input idx=/tmp/bw-sorted/idx.npy --no-baselines \
  > "$OUTD/bench_pointcloud_sorted.txt" 2>&1
el "bench pointcloud, sorted index (same tuning): rc=$?"
cat "$OUTD/bench_pointcloud_sorted.txt"
"$BIN/test_runtime" --gtest_filter='CudaDevice.*' > "$OUTD/test_runtime.log" 2>&1
el "test_runtime CudaDevice.*: rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$OUTD/test_runtime.log" | tr '\n' ' ')"
grep -E "device-to-device" "$OUTD/test_runtime.log"
"$BIN/test_gpu" --gtest_filter='GpuCases.*' > "$OUTD/test_gpu.log" 2>&1
el "test_gpu GpuCases.*: rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$OUTD/test_gpu.log" | tr '\n' ' ')"
# Where the tuned fused kernel waits: ncu's stall reasons (clocks as found).
if command -v ncu > /dev/null && [[ -z "${SKIP_NCU:-}" ]]; then
  timeout 60 ncu --clock-control none -k regex:^gemm0$ -c 1 --section SpeedOfLight \
    --section Occupancy --section LaunchStats \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio \
    "$BIN/tilefuse" bench "$P" --no-baselines --no-check --warmup 0 --repeats 1 \
    > "$OUTD/ncu_tuned.txt" 2>&1
  el "ncu: rc=$?"
  grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occ|Block Size|Grid Size" "$OUTD/ncu_tuned.txt"
  grep -E "stalled" "$OUTD/ncu_tuned.txt" | sort -k3 -n -r | head -8
fi
cp -r /tmp/bw-cache "$OUTD/cache" 2>/dev/null; (cd "$OUTD" && tar czf cache.tgz cache && rm -rf cache)
el done
