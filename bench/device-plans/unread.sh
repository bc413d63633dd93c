#!/usr/bin/env bash
# b0e1ee7 on the GPU: an out-of-range index that no kernel reads is an error with --device cuda
# too (CudaProgram::bind runs driver::check_unread_indices on host inputs), and a valid index
# still runs. ~20 s. Log: $OUT/unread.txt.
set -uo pipefail
BIN="${TF_BIN:-.devcarry/bin}"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export TILEFUSE_CACHE_DIR=/tmp/tf-cache
D=/tmp/unread; mkdir -p "$D"
python3 - "$D" <<'PY'
import sys, numpy as np
np.save(sys.argv[1] + "/bad.npy", np.array([0, 7], dtype=np.int64))
np.save(sys.argv[1] + "/ok.npy", np.array([-5, 4], dtype=np.int64))
PY
printf 'def k0(x: f32[5, 0], w: f32[0, 3], i: i64[2]):\n    return x[i] @ w\n' > "$D/k0.tfs"
printf 'def n0(x: f32[5, 4], w: f32[4, 0], i: i64[2]):\n    return x[i] @ w\n' > "$D/n0.tfs"
printf 'def s0(x: f16[5, 64], w: f16[64, 32], i: i64[2]):\n    return x[i][0] @ w\n' > "$D/s0.tfs"
printf 'def g(x: f16[5, 64], w: f16[64, 32], i: i64[2]):\n    return x[i] @ w\n' > "$D/g.tfs"
for p in k0 n0 s0 g; do
  for plan in fused unfused; do
    for f in bad ok; do
      echo "== $p $plan $f" >> "$OUT/unread.txt"
      "$BIN/tilefuse" run --device cuda --check --plan $plan --input i=$D/$f.npy $D/$p.tfs \
        >> "$OUT/unread.txt" 2>&1
      echo "rc $?" >> "$OUT/unread.txt"
    done
  done
done
