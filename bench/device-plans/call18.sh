#!/usr/bin/env bash
# Session 37: wgmma descriptors advanced by one 32-bit add (tf_wgmma.cuh's wgmma_desc_advance:
# the consumer's k-tile from 71 to 54 SASS instructions in the plain 128x256x64 kernel). The
# new binaries ($BIN) against the ones before the change ($OLD: tilefuse and libtilefuse.so
# only). (1) test_gpu's warp-specialized variants on the new build; (2) ncu, one launch each,
# of moe_up_proj's plain GEMM (8192x4096 @ 4096x14336 bf16, 128x256x64/4/8/persistent) and
# gather_heavy's /ra256 kernel, old and new: cycles, instructions, duration; (3) three
# interleaved rounds of bench, old and new, on the moe plain GEMM (300 repeats: sustained, at
# the power cap), gather_heavy (/ra256, 2000) and the seed (/ra256, 2000). About 330 s. Carry
# [".devcarry/bin", ".devcarry/old"]. Logs: $OUT/logs.tgz.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OLD="${TF_OLD:-.devcarry/old}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
L=/tmp/call18; mkdir -p "$L"
pack() { tar czf "$OUT/logs.tgz" -C "$L" .; }
export TILEFUSE_CACHE_DIR=/tmp/tf-cache-call18
export TILEFUSE_TEST_BINARY="$PWD/$BIN/tilefuse"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$L/gpu.txt"
cat > "$L/moe_plain.tfs" <<'TFS'
# moe_up_proj's GEMM on the materialized rows
def moe_plain(x: bf16[8192, 4096], w: bf16[4096, 14336]):
    return x @ w
TFS
# 1. Correct on the GPU (the variants whose main loop the change touches).
timeout 200 "$BIN/test_gpu" --gtest_filter='GpuWarpSpecialized/*EdgeProgramsMatchTheOracle/default:GpuWarpSpecialized/*/persistent_1:GpuWarpSpecialized/*/register_a_1*:GpuWarpSpecialized/*/cluster_multicast_1*:GpuWarpSpecialized/*/tma_0:GpuTmaStoreEpilogue.*:GpuStreamK.*' \
  > "$L/test_gpu.txt" 2>&1; echo "test_gpu rc $?" | tee -a "$L/checks.txt"
grep -E "PASSED|FAILED" "$L/test_gpu.txt" | tail -4 | tee -a "$L/checks.txt"
for p in seed_gather_mm_f16 gather_heavy_bf16; do
  timeout 60 "$BIN/tilefuse" run "bench/programs/$p.tfs" --check \
    --gemm-config 128x256x64/4/8/persistent/ra256 > "$L/check_$p.txt" 2>&1
  echo "$p /ra256: rc $? $(tail -1 "$L/check_$p.txt")" | tee -a "$L/checks.txt"
done
pack
# 2. ncu, one launch each.
N() { # tag bin prog config
  timeout 120 ncu --clock-control none -k regex:gemm -c 1 \
    --metrics sm__cycles_elapsed.max,smsp__inst_executed.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second \
    "$2/tilefuse" run "$3" --gemm-config "$4" > "$L/ncu_$1.txt" 2>&1
  echo "$1: $(grep -E 'sm__cycles_elapsed.max|smsp__inst_executed.sum|gpu__time_duration.sum|per_second' "$L/ncu_$1.txt" | awk '{print $1, $(NF-1), $NF}' | tr '\n' ' ')" | tee -a "$L/ncu.txt"
}
N moe_old "$OLD" "$L/moe_plain.tfs" 128x256x64/4/8/persistent
N moe_new "$BIN" "$L/moe_plain.tfs" 128x256x64/4/8/persistent
N gh_old "$OLD" bench/programs/gather_heavy_bf16.tfs 128x256x64/4/8/persistent/ra256
N gh_new "$BIN" bench/programs/gather_heavy_bf16.tfs 128x256x64/4/8/persistent/ra256
pack
# 3. Interleaved bench rounds, fused row.
B() { # tag bin prog config repeats
  echo "$1 $(timeout 120 "$2/tilefuse" bench "$3" --no-check --no-baselines --gemm-config "$4" \
    --repeats "$5" 2>&1 | awk '$1=="fused"{print $2, $3}')" | tee -a "$L/times.txt"
}
for r in 1 2 3; do
  B "moe_old_r$r" "$OLD" "$L/moe_plain.tfs" 128x256x64/4/8/persistent 300
  B "moe_new_r$r" "$BIN" "$L/moe_plain.tfs" 128x256x64/4/8/persistent 300
  B "gh_old_r$r" "$OLD" bench/programs/gather_heavy_bf16.tfs 128x256x64/4/8/persistent/ra256 2000
  B "gh_new_r$r" "$BIN" bench/programs/gather_heavy_bf16.tfs 128x256x64/4/8/persistent/ra256 2000
  B "seed_old_r$r" "$OLD" bench/programs/seed_gather_mm_f16.tfs 128x256x64/4/8/ra256 2000
  B "seed_new_r$r" "$BIN" bench/programs/seed_gather_mm_f16.tfs 128x256x64/4/8/ra256 2000
  pack
done
