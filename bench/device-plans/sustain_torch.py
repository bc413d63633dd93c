#!/usr/bin/env python3
"""torch.mm (PyTorch eager's cuBLAS) on bf16 [M, K] @ [K, N], timed the way `tilefuse bench` times:
a 256 MiB buffer zeroed before each call (L2 flushed), CUDA events around the call, the median of
REPEATS calls after 20 warm-up calls. Prints one line: shape, median and mean us.

    python3 sustain_torch.py M K N REPEATS
"""
import statistics
import sys

import torch

M, K, N, repeats = (int(a) for a in sys.argv[1:5])
torch.manual_seed(0)
x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
w = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
flush = torch.empty(256 << 20, device="cuda", dtype=torch.uint8)
times = []
for i in range(repeats + 20):
    flush.zero_()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    torch.mm(x, w)
    b.record()
    if i >= 20:
        times.append((a, b))
torch.cuda.synchronize()
us = [a.elapsed_time(b) * 1e3 for a, b in times]
print(f"torch.mm {M}x{K}x{N}: median {statistics.median(us):.1f} us, mean {statistics.mean(us):.1f} "
      f"over {repeats}")
