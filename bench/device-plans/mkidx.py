#!/usr/bin/env python3
"""Index inputs for call1.sh: writes DIR/<program>_<kind>.npy (int64).

kinds: random (uniform with repeats, as bench draws), sorted (the same, sorted),
arange (contiguous rows), and for moe_up_proj `routing`: vLLM-style top-2 routing
over 8 experts, the (expert, token) pairs sorted by expert, token ids ascending in
each expert (what a sorted MoE dispatch gathers).
"""
import sys
import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(29)
# program: (rows of the index, source rows)
shapes = {"gather_heavy": (16384, 16384), "seed": (2048, 2048), "moe": (8192, 4096)}
for name, (rows, src) in shapes.items():
    r = rng.integers(0, src, rows, dtype=np.int64)
    np.save(f"{out}/{name}_random.npy", r)
    np.save(f"{out}/{name}_sorted.npy", np.sort(r))
    np.save(f"{out}/{name}_arange.npy", np.arange(rows, dtype=np.int64) % src)
tokens, experts, top_k = 4096, 8, 2
choice = np.argsort(rng.random((tokens, experts)), axis=1)[:, :top_k]  # distinct experts a token
pairs = sorted((int(e), t) for t in range(tokens) for e in choice[t])
np.save(f"{out}/moe_routing.npy", np.array([t for _, t in pairs], dtype=np.int64))
