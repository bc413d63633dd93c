#!/usr/bin/env bash
# ncu of cuBLAS's kernel (torch.mm) and ours on the ungathered gather_heavy and moe_up_proj
# shapes, then our register_a kernels on the gathered programs at the same configs (cycles at the
# same clock: is register_a's 4-5% over the plain kernel in bench cycles or clocks?). ~360 s.
# Reports under $OUT.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache
cat > /tmp/mm.py <<'PY'
import sys, torch
m, n, k = map(int, sys.argv[1:4])
a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    c = a @ b
torch.cuda.synchronize()
PY
NCU=(ncu --clock-control none --set full)
"${NCU[@]}" -c 6 python3 /tmp/mm.py 16384 1024 1024 > "$OUT/ncu_cublas_gh.txt" 2>&1
"${NCU[@]}" -c 6 python3 /tmp/mm.py 8192 14336 4096 > "$OUT/ncu_cublas_moe.txt" 2>&1
"${NCU[@]}" -k regex:gemm -c 1 "$BIN/tilefuse" run bench/device-plans/twins/gh_plain.tfs --device cuda \
  --gemm-config 128x256x64/4/8/persistent > "$OUT/ncu_ours_gh.txt" 2>&1
"${NCU[@]}" -k regex:gemm -c 1 "$BIN/tilefuse" run bench/device-plans/twins/moe_plain.tfs --device cuda \
  --gemm-config 128x256x64/4/8/persistent > "$OUT/ncu_ours_moe.txt" 2>&1
"${NCU[@]}" -k regex:gemm -c 1 "$BIN/tilefuse" run bench/programs/gather_heavy_bf16.tfs \
  --device cuda --plan fused --gemm-config 128x256x64/4/8/persistent/ra > "$OUT/ncu_ours_gh_ra.txt" 2>&1
"${NCU[@]}" -k regex:gemm -c 1 "$BIN/tilefuse" run bench/programs/moe_up_proj_bf16.tfs \
  --device cuda --plan fused --gemm-config 128x256x64/4/8/persistent/ra > "$OUT/ncu_ours_moe_ra.txt" 2>&1
for f in "$OUT"/ncu_*.txt; do
  echo "== $f"; grep -E "^  [a-z_0-9]+.*\(|Duration|SM Frequency|Elapsed Cycles|Compute \(SM\) Throughput|Memory Throughput|Executed Ipc A|Registers Per|Grid Size|Cluster Size" "$f" | head -40
done > "$OUT/summary.txt"
