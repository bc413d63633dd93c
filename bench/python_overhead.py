"""Issue 13's host overhead from Python, measured on the CPU (no GPU needed).

    PYTHONPATH=python /usr/bin/python3 bench/python_overhead.py [--calls N] [--profile]

The program is the GPU test's (python/tests/test_torch_cuda.py::
test_host_overhead_of_1000_calls): tiny(x: f16[T, 64], w: f16[64, 64],
idx: i64[M] in [0, T)) at T=64, M=16 (K=N=64), here in f32 (numpy has f16,
but the CPU executor's f16 GEMM is slower and only adds kernel time). For
numpy arrays and, when torch imports, torch CPU tensors it prints the median
time per call (us) of:
  - call:       k(x, w, idx): the whole call (the CPU executor's kernel too);
  - tf_run:     the same tf_run from Python on the DLTensors the call packed
                (ctypes and the library, no Python packing or allocation);
  - package+ctypes: the call with tf_run replaced by a C function that
                does nothing: what the package and ctypes add (packing, the
                output's allocation, the checks), free of the executor's noise;
and for torch the eager `x[idx] @ w` next to it. --profile runs cProfile
over the torch calls and prints the top entries."""

import argparse
import ctypes
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import tilefuse  # noqa: E402
from tilefuse import _lib  # noqa: E402

PROGRAM = ("def tiny(x: f32[T, 64], w: f32[64, 64], idx: i64[M] in [0, T)):\n"
           "    return x[idx] @ w\n")


def median_us(fn, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1e3


def direct_run(k):
    """A callable that repeats the last call's tf_run on the same packed buffers."""
    b = k._tls.b
    f = _lib.lib().tf_run
    h, n_in, n_out = k._handle, k._n_in, k._n_out
    return lambda: f(h, b.inputs, n_in, b.outputs, n_out, b.run, b.needed_ref)


class _StubLib:
    """The loaded library with tf_run replaced by a C function that does
    nothing (libc's getpid, with tf_run's argtypes and no result, which the
    package reads as success): a call then costs what the package and ctypes
    add, without the library or the executor."""

    def __init__(self, real):
        self._real = real
        stub = ctypes.CDLL(None).getpid
        stub.restype, stub.argtypes = None, real.tf_run.argtypes
        self.tf_run = stub
        raw = ctypes.CDLL(None)["getpid"]  # tf_run_raw's stand-in: no argtypes
        raw.restype = None
        self.tf_run_raw = raw

    def __getattr__(self, name):
        return getattr(self._real, name)


def stubbed_us(k, args, n):
    real = _lib.lib()
    stub = _StubLib(real)
    _lib._lib = stub
    saved = k.__dict__.get("_tf_run")  # the package keeps tf_run on the kernel
    if saved is not None:
        k._tf_run = stub.tf_run_raw
    try:
        for _ in range(50):
            k(*args)
        return median_us(lambda: k(*args), n)
    finally:
        _lib._lib = real
        if saved is not None:
            k._tf_run = saved


def measure(label, k, args, n, eager=None):
    for _ in range(50):
        k(*args)
    call = median_us(lambda: k(*args), n)
    last = k(*args)  # the output the repeated tf_run writes (kept alive)
    run = median_us(direct_run(k), n)
    del last
    py = stubbed_us(k, args, n)
    line = (f"{label:8s} call {call:7.2f}  tf_run {run:7.2f}  package+ctypes (tf_run stubbed) "
            f"{py:6.2f}")
    if eager is not None:
        for _ in range(50):
            eager()
        line += f"  eager {median_us(eager, n):7.2f}"
    print(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    k = tilefuse.compile(PROGRAM, device="cpu", threads=1)
    import numpy as np
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (64, 64)).astype(np.float32)
    w = rng.uniform(-1, 1, (64, 64)).astype(np.float32)
    idx = rng.integers(0, 64, 16)
    print(f"median us per call, {a.calls} calls, M=16 K=N=64 f32, CPU, python {sys.version.split()[0]}")
    measure("numpy", k, (x, w, idx), a.calls)
    try:
        import torch
    except ImportError:
        print("torch: not installed")
        return
    torch.set_num_threads(1)
    tx, tw, ti = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(idx)
    measure(f"torch", k, (tx, tw, ti), a.calls, eager=lambda: tx[ti] @ tw)
    if a.profile:
        import cProfile
        import pstats
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(a.calls):
            k(tx, tw, ti)
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
