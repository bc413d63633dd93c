"""Helpers shared by the Python tests: fresh random inputs (never zeros), the
CLI to compare with, skips and raises that work with or without pytest."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    import pytest
except ImportError:  # the GPU machine may lack pytest: run.py stands in
    pytest = None


class SkipTest(Exception):
    pass


def skip(reason):
    """Skips the running test, or the module when called at import (under pytest,
    or under run.py)."""
    if pytest is not None and os.environ.get("TILEFUSE_UNDER_PYTEST"):
        pytest.skip(reason, allow_module_level=True)
    raise SkipTest(reason)


def import_or_skip(name):
    """The module, or a skip when it is not installed (numpy on the GPU machine)."""
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError:
        skip(f"{name} is not installed")


def save_npy(path, tensor):
    """Writes a torch tensor as a .npy file without numpy (f16/f32/f64/i32/i64/
    u8/bool: the dtypes the CLI's --input reads directly)."""
    import ctypes
    t = tensor.detach().cpu().contiguous()
    descr = {"torch.float16": "<f2", "torch.float32": "<f4", "torch.float64": "<f8",
             "torch.int32": "<i4", "torch.int64": "<i8", "torch.uint8": "|u1",
             "torch.bool": "|b1"}[str(t.dtype)]
    shape = "(" + "".join(f"{d}, " for d in t.shape) + ")"
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    data = ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
        f.write(data)


def load_npy_torch(path, dtype):
    """A .npy file of `dtype` (a torch dtype) as a torch tensor, without numpy."""
    import ast
    import torch
    with open(path, "rb") as f:
        raw = f.read()
    n = int.from_bytes(raw[8:10], "little")
    header = ast.literal_eval(raw[10:10 + n].decode())
    flat = torch.frombuffer(bytearray(raw[10 + n:]), dtype=dtype)
    return flat.reshape(header["shape"])


class _Raises:
    def __init__(self, exc, match):
        self.exc, self.match, self.value = exc, match, None

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is None:
            raise AssertionError(f"{self.exc.__name__} not raised")
        if not issubclass(et, self.exc):
            return False
        if self.match and not re.search(self.match, str(ev)):
            raise AssertionError(f"{self.exc.__name__}: {ev!r} does not match {self.match!r}")
        self.value = ev
        return True


def raises(exc, match=None):
    """Like pytest.raises(exc, match=...); .value is the exception."""
    return _Raises(exc, match)


def cli():
    """The tilefuse binary ($TILEFUSE_CLI, else build/tilefuse)."""
    return os.environ.get("TILEFUSE_CLI") or os.path.join(ROOT, "build", "tilefuse")


def run_cli(*args, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run([cli(), *args], capture_output=True, text=True, env=e)
    return p.returncode, p.stdout + p.stderr


def fresh_seed():
    """A new seed per run (printed by the tests that use it, so a failure can be
    reproduced with TILEFUSE_TEST_SEED)."""
    env = os.environ.get("TILEFUSE_TEST_SEED")
    seed = int(env) if env else int.from_bytes(os.urandom(4), "little")
    print(f"seed {seed}", file=sys.stderr)
    return seed
