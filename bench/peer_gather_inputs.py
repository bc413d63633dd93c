#!/usr/bin/env python3
"""The hand-written Triton gather matmul (../shared/bench/peers/triton_gather_mm.py, index load
hoisted) timed on tilefuse's own inputs, and a sorted index for tilefuse (issue 12).

    python3 bench/peer_gather_inputs.py DIR [--peers ../shared/bench/peers] [--sorted-out DIR2]

DIR holds `x.npy`, `idx.npy` and `w.npy` as `tilefuse bench PROG --save-inputs DIR` writes them
for a program `x[idx] @ w` (x: [T, K], idx: [M], w: [K, N]). The peer's own driver,
anchor_shapes.py, draws its index with torch.randint and sorts it when M > T (each table row then
gathered by consecutive rows: about one read of the table from memory), while tilefuse's bench
draws a uniform unsorted index (rows gathered at random: re-read from memory where the L2 misses).
This script times the Triton kernel on both: DIR's index as it is, and the same index sorted.
With --sorted-out it also writes DIR2/idx.npy, the sorted index, for
`tilefuse bench PROG --input idx=DIR2/idx.npy`, so both tools are timed on both indices.

One JSON line per index: {"index": "as_given"|"sorted", "us", "tflops", "relerr", "gbps", "config"}
(config: the autotuner's pick) where
gbps counts the bytes the program must move (each gathered row once, the index, w and the output
once), as tilefuse bench does. Timing: triton.testing.do_bench, median (L2 flushed).
"""
import argparse
import json
import os
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--peers", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "..", "..", "shared", "bench", "peers"))
    ap.add_argument("--sorted-out", default="")
    args = ap.parse_args()
    import torch
    from triton.testing import do_bench

    # The kernel's definition without the file's own driver at its end; compiled under the
    # file's real path, where Triton's @jit reads the source back (inspect.getsourcelines).
    path = os.path.abspath(os.path.join(args.peers, "triton_gather_mm.py"))
    src = open(path).read().split("dt, n, hoist =")[0]
    g = {}
    exec(compile(src, path, "exec"), g)
    x = torch.from_numpy(np.load(os.path.join(args.dir, "x.npy"))).cuda()
    w = torch.from_numpy(np.load(os.path.join(args.dir, "w.npy"))).cuda()
    idx = torch.from_numpy(np.load(os.path.join(args.dir, "idx.npy")).astype(np.int64)).cuda()
    if args.sorted_out:
        os.makedirs(args.sorted_out, exist_ok=True)
        np.save(os.path.join(args.sorted_out, "idx.npy"), np.sort(idx.cpu().numpy()))
    M, K, N = idx.shape[0], x.shape[1], w.shape[1]
    esize = x.element_size()
    must_move = M * K * esize + M * idx.element_size() + K * N * esize + M * N * esize
    for name, ix in (("as_given", idx), ("sorted", torch.sort(idx).values)):
        ix = torch.where(ix < 0, ix + x.shape[0], ix)
        ref = x[ix].double() @ w.double()
        out = g["run"](x, ix, w, True)
        torch.cuda.synchronize()
        rel = float((out.double() - ref).norm() / ref.norm())
        ms = do_bench(lambda: g["run"](x, ix, w, True), warmup=50, rep=300, return_mode="median")
        print(json.dumps({"index": name, "M": M, "K": K, "N": N, "us": round(ms * 1e3, 2),
                          "tflops": round(2 * M * N * K / (ms * 1e-3) / 1e12, 1), "relerr": rel,
                          "gbps": round(must_move / (ms * 1e-3) / 1e9, 1),
                          "config": str(g["gather_mm"].best_config)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
