#!/usr/bin/env python3
"""Tests of bench/compare_torch.py that need neither torch nor a GPU (ctest compare_torch_*).

    python3 bench/test_compare_torch.py [TILEFUSE]

- the .tfs -> Python translation of every program in bench/programs, tests/cases, examples and
  the valid ones of tests/fuzz/corpus: the header (names, dtypes, shapes, ranges) against
  `tilefuse emit --stage=graph`, and the function run on a recording stand-in for torch that has
  only the names real PyTorch has (no torch.gelu, no x.silu(), no relu(inplace=...), ...);
- the .npy reader on the files `tilefuse bench --save-inputs` writes (CPU);
- the tilefuse side of the script (bench --json, run --save-output, the table) on the CPU;
- the skip path: without torch, or with torch but no CUDA device, it says why and exits 0.

Without TILEFUSE (or $TILEFUSE) the tests that run tilefuse are skipped.
"""

import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no bench/__pycache__ in the source tree
import compare_torch as ct  # noqa: E402

TILEFUSE = os.environ.get("TILEFUSE")

class InterleavedTimer(unittest.TestCase):
    def test_time_interleaved(self):
        """The interleaved timer on a fake torch whose kernels advance a fake clock: every fn is
        timed by its own events, the order alternates, and the rounds cover --pair-ms."""
        clock = [0.0]  # ms
        log = []

        class Event:
            def __init__(self, enable_timing):
                self.t = None

            def record(self):
                self.t = clock[0]

            def elapsed_time(self, end):
                return end.t - self.t

        class Buffer:
            def zero_(self):
                clock[0] += 0.01

        fake_event = Event

        class Cuda:
            Event = fake_event

            @staticmethod
            def synchronize():
                pass

        class FakeTorch:
            cuda = Cuda
            int8 = "int8"

            @staticmethod
            def empty(n, dtype, device):
                return Buffer()

        def kernel(name, ms):
            def f():
                log.append(name)
                clock[0] += ms
            return f

        spec = {"warmup": 2, "repeats": 5, "settle_ms": 0, "pair_ms": 0}
        (a, b), method = ct.time_interleaved(FakeTorch, [kernel("a", 1.5), kernel("b", 0.25)],
                                             spec)
        self.assertAlmostEqual(a, 1500.0, places=6)
        self.assertAlmostEqual(b, 250.0, places=6)
        self.assertIn("interleaved", method)
        timed = log[-10:]  # 5 rounds, the order reversed every other round
        self.assertEqual(timed, ["a", "b", "b", "a", "a", "b", "b", "a", "a", "b"])
        # Real time does not advance with the fake clock: pair_ms asks for more rounds than
        # --repeats only through the settling's measured rate (here it stays at 5).
        self.assertEqual(log.count("a"), log.count("b"))

        # With torch.cuda._sleep, the rounds go in batches of INTERLEAVED_BATCH, each behind one
        # hold enqueued before its calls and outside their events (the times stay the kernels').
        def sleep(cycles):
            log.append("hold")
            clock[0] += cycles / 1e6  # a 1 GHz fake: 1e6 cycles a ms

        Cuda._sleep = staticmethod(sleep)
        del log[:]
        spec["repeats"] = 2 * ct.INTERLEAVED_BATCH + 3
        (a, b), method = ct.time_interleaved(FakeTorch, [kernel("a", 1.5), kernel("b", 0.25)],
                                             spec)
        self.assertAlmostEqual(a, 1500.0, places=6)
        self.assertAlmostEqual(b, 250.0, places=6)
        self.assertIn("GPU hold", method)
        self.assertEqual(log[4], "hold")  # the calibration, after the warm-up's two rounds
        timed = log[-(2 * spec["repeats"] + 3):]  # three batches, each behind its hold
        holds = [i for i, x in enumerate(timed) if x == "hold"]
        self.assertEqual(holds, [0, 1 + 2 * ct.INTERLEAVED_BATCH, 2 + 4 * ct.INTERLEAVED_BATCH])
        self.assertEqual(timed[1:5], ["a", "b", "b", "a"])
        self.assertEqual(timed[-7:], ["hold", "a", "b", "b", "a", "a", "b"])
        self.assertEqual(log.count("a"), log.count("b"))


if __name__ == "__main__" and len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
    TILEFUSE = os.path.abspath(sys.argv.pop(1))


# --- A recording stand-in for torch ------------------------------------------------------------

# The names real PyTorch has in each form, for the builtins .tfs accepts (src/frontend/builtins.cpp).
TORCH_FNS = {"relu", "sigmoid", "tanh", "exp", "log", "sqrt", "abs", "neg", "maximum", "minimum",
             "hypot", "clamp", "clip", "where", "mm", "matmul", "bmm", "addmm", "index_select",
             "transpose", "swapaxes", "t", "permute"}
F_FNS = {"relu", "gelu", "silu", "sigmoid", "tanh", "linear"}
METHODS = {"relu", "sigmoid", "tanh", "exp", "log", "sqrt", "abs", "neg", "maximum", "minimum",
           "hypot", "clamp", "clip", "mm", "matmul", "bmm", "addmm", "index_select", "transpose",
           "swapaxes", "t", "permute", "expand", "to", "float", "half", "bfloat16", "double", "int",
           "long", "bool", "byte", "char", "contiguous", "clone", "T"}
NO_INPLACE = {"relu"}  # torch.relu / Tensor.relu take no `inplace`


def show(v):
    if isinstance(v, Sym):
        return v.expr
    if isinstance(v, slice):
        return ":".join("" if x is None else show(x) for x in (v.start, v.stop, v.step))
    if isinstance(v, tuple):
        return "(" + ", ".join(show(x) for x in v) + ")"
    if v is Ellipsis:
        return "..."
    if isinstance(v, type):
        return v.__name__
    return repr(v)


def call_text(name, args, kwargs):
    parts = [show(a) for a in args] + [f"{k}={show(v)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


class Sym:
    """A tensor that records the expression computing it."""

    def __init__(self, expr):
        self.expr = expr

    def __getattr__(self, name):
        if name.startswith("__") or name not in METHODS:
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        if name == "T":
            return Sym(f"{self.expr}.T")

        def method(*args, **kwargs):
            if name in NO_INPLACE and "inplace" in kwargs:
                raise TypeError(f"{name}() got an unexpected keyword argument 'inplace'")
            return Sym(call_text(f"{self.expr}.{name}", args, kwargs))
        return method

    def __getitem__(self, i):
        return Sym(f"{self.expr}[{show(i)[1:-1] if isinstance(i, tuple) else show(i)}]")

    def __bool__(self):
        raise TypeError("a tensor's truth value is ambiguous")

    def __iadd__(self, other):
        raise AssertionError("in-place += on a tensor (the translation must rebind)")

    __isub__ = __imul__ = __itruediv__ = __imatmul__ = __iadd__


def _binop(sym):
    return (lambda a, b: Sym(f"({show(a)} {sym} {show(b)})"),
            lambda a, b: Sym(f"({show(b)} {sym} {show(a)})"))


for _op, _sym in [("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"), ("matmul", "@"),
                  ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="), ("eq", "=="),
                  ("ne", "!=")]:
    _f, _r = _binop(_sym)
    setattr(Sym, f"__{_op}__", _f)
    if _op not in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(Sym, f"__r{_op}__", _r)
Sym.__neg__ = lambda a: Sym(f"(-{a.expr})")
Sym.__invert__ = lambda a: Sym(f"(~{a.expr})")
Sym.__hash__ = object.__hash__


def fake_torch():
    torch = types.ModuleType("torch")
    nn = types.ModuleType("torch.nn")
    fmod = types.ModuleType("torch.nn.functional")
    torch.nn, nn.functional = nn, fmod
    for d in ct.TORCH_DTYPE.values():
        setattr(torch, d, Sym(f"torch.{d}"))
    for alias, d in [("half", "float16"), ("float", "float32"), ("double", "float64"),
                     ("int", "int32"), ("long", "int64")]:
        setattr(torch, alias, getattr(torch, d))

    def fn(prefix, name):
        def f(*args, **kwargs):
            if prefix == "torch" and name in NO_INPLACE and "inplace" in kwargs:
                raise TypeError(f"{name}() got an unexpected keyword argument 'inplace'")
            if prefix == "torch" and name == "permute" and len(args) != 2:
                raise TypeError("permute(): argument 'dims' must be tuple of ints")
            return Sym(call_text(f"{prefix}.{name}", args, kwargs))
        return f

    for n in TORCH_FNS:
        setattr(torch, n, fn("torch", n))
    for n in F_FNS:
        setattr(fmod, n, fn("F", n))
    return torch


def install_fake_torch():
    torch = fake_torch()
    saved = {k: sys.modules.get(k) for k in ("torch", "torch.nn", "torch.nn.functional")}
    sys.modules["torch"] = torch
    sys.modules["torch.nn"] = torch.nn
    sys.modules["torch.nn.functional"] = torch.nn.functional
    return torch, saved


def restore_modules(saved):
    for k, v in saved.items():
        if v is None:
            sys.modules.pop(k, None)
        else:
            sys.modules[k] = v


def run_program(path_or_text, text=None):
    src = text if text is not None else ct.read_text(path_or_text)
    prog = ct.translate_tfs(src)
    torch, saved = install_fake_torch()
    try:
        fn = ct.build_function(prog, torch, str(path_or_text))
        out = fn(*[Sym(p.name) for p in prog.params])
    finally:
        restore_modules(saved)
    outs = out if isinstance(out, tuple) else (out,)
    return prog, [o.expr for o in outs]


def all_programs():
    paths = []
    for pat in ("bench/programs/*.tfs", "tests/cases/*.tfs", "examples/*.tfs",
                "tests/fuzz/corpus/*.tfs"):
        paths += sorted(glob.glob(os.path.join(REPO, pat)))
    return paths


def tilefuse_graph(path):
    """(params [(name, dtype, shape, range)], number of outputs), or None where tilefuse rejects
    the program."""
    p = subprocess.run([TILEFUSE, "emit", "--stage=graph", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return None
    params, n_out = [], 0
    for ln in p.stdout.splitlines():
        m = re.match(r"%\d+ = parameter (\w+)(?: in \[(-?\d+), (-?\d+)\))? : (\w+)\[([^\]]*)\]", ln)
        if m:
            shape = [int(d) for d in m.group(5).split(",") if d.strip()]
            rng = (int(m.group(2)), int(m.group(3))) if m.group(2) is not None else (None, None)
            params.append((m.group(1), m.group(4), shape, rng))
        if ln.startswith("return "):
            n_out = len(ln[len("return "):].split(","))
    return params, n_out


# A program that uses every call form that differs between .tfs and PyTorch.
SHIMS_TFS = '''import torch
from torch import nn
from torch import relu as r, gelu as g
@torch.compile
def shims(x: torch.float16[4, 8],   # a comment in the header
          idx: i64[3] in [-4, 4), w: f16[8, 2],
          s: f32[]) -> tuple[torch.Tensor, torch.Tensor]:
    a = torch.gelu(x).silu() + nn.functional.silu(x) + g(x)
    a += 1
    b = torch.relu(a, inplace=False) + a.relu(inplace=False) + r(a, inplace=False)
    c = torch.permute(b, 1, 0).permute(1, 0)
    F = c.to(f32) * s
    return F[idx] @ w.float(), torch.silu(F, inplace=False)
'''


class Translate(unittest.TestCase):
    def test_seed(self):
        prog, outs = run_program(os.path.join(REPO, "bench/programs/seed_gather_mm_f16.tfs"))
        self.assertEqual(prog.name, "gather_mm")
        self.assertEqual([(p.name, p.dtype, p.shape) for p in prog.params],
                         [("x", "f16", [2048, 2048]), ("y", "f16", [2048, 2048]),
                          ("index", "i64", [2048])])
        self.assertEqual(outs, ["(x[index] @ y)"])
        self.assertIn("def gather_mm(x, y, index):", prog.python_source)

    def test_ranges_and_summary(self):
        prog, outs = run_program(os.path.join(REPO, "bench/programs/moe_up_proj_bf16.tfs"))
        self.assertEqual((prog.params[1].lo, prog.params[1].hi), (0, 4096))
        self.assertEqual(prog.shape_summary(), "bf16[4096,4096] i64[8192] bf16[4096,14336]")
        self.assertEqual(outs, ["(x[idx] @ w)"])

    def test_shims(self):
        prog, outs = run_program("<shims>", SHIMS_TFS)
        self.assertEqual([p.name for p in prog.params], ["x", "idx", "w", "s"])
        self.assertEqual(prog.params[3].shape, [])
        self.assertEqual((prog.params[1].lo, prog.params[1].hi), (-4, 4))
        self.assertEqual(prog.params[0].dtype, "f16")
        self.assertNotIn("@torch.compile", prog.python_source)
        self.assertNotIn("+=", prog.python_source)
        self.assertEqual(len(outs), 2)
        self.assertIn("F.silu(F.gelu(x))", outs[0])
        self.assertIn("torch.relu(", outs[0])
        self.assertNotIn("inplace", outs[0])
        self.assertIn("torch.permute(", outs[0])
        self.assertIn(".to(torch.float32)", outs[0])
        self.assertTrue(outs[1].startswith("F.silu("), outs[1])
        self.assertIn("inplace=False", outs[1])  # F.silu takes it

    @unittest.skipUnless(TILEFUSE, "no tilefuse binary")
    def test_shims_program_is_valid_tfs(self):
        with tempfile.NamedTemporaryFile("w", suffix=".tfs", delete=False) as f:
            f.write(SHIMS_TFS)
        try:
            self.assertIsNotNone(tilefuse_graph(f.name), "tilefuse rejects SHIMS_TFS")
        finally:
            os.unlink(f.name)

    def test_every_program(self):
        n = 0
        for path in all_programs():
            with self.subTest(program=os.path.relpath(path, REPO)):
                graph = tilefuse_graph(path) if TILEFUSE else None
                if TILEFUSE and graph is None:
                    continue  # an error case of the corpus
                if not TILEFUSE and os.path.basename(path).startswith(("error_", "regress_deep",
                                                                      "regress_tuple")):
                    continue
                prog, outs = run_program(path)
                n += 1
                if graph:
                    params, n_out = graph
                    self.assertEqual([(p.name, p.dtype, p.shape, (p.lo, p.hi))
                                      for p in prog.params], [tuple(x) for x in params])
                    self.assertEqual(len(outs), n_out)
        self.assertGreaterEqual(n, 20)


class Npy(unittest.TestCase):
    def test_handwritten(self):
        import struct
        header = "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }"
        header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
        blob = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode()
        blob += struct.pack("<6q", 1, 2, 3, -4, 5, 6)
        with tempfile.NamedTemporaryFile(suffix=".npy", delete=False) as f:
            f.write(blob)
        try:
            descr, shape, data = ct.read_npy_raw(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual((descr, shape), ("<i8", [2, 3]))
        self.assertEqual(struct.unpack("<6q", data), (1, 2, 3, -4, 5, 6))


class SameTimerLibrary(unittest.TestCase):
    """Where the same-timer column finds libtilefuse.so: $TILEFUSE_LIBRARY, else next to the
    binary, else nowhere (the column is then left out)."""

    def test_lookup(self):
        saved = os.environ.pop("TILEFUSE_LIBRARY", None)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                tf = os.path.join(tmp, "tilefuse")
                open(tf, "w").close()
                self.assertIsNone(ct.tilefuse_library(tf))
                lib = os.path.join(tmp, "libtilefuse.so")
                open(lib, "w").close()
                self.assertEqual(ct.tilefuse_library(tf), lib)
                other = os.path.join(tmp, "other.so")
                open(other, "w").close()
                os.environ["TILEFUSE_LIBRARY"] = other
                self.assertEqual(ct.tilefuse_library(tf), other)
                os.environ["TILEFUSE_LIBRARY"] = os.path.join(tmp, "missing.so")
                self.assertIsNone(ct.tilefuse_library(tf))
        finally:
            os.environ.pop("TILEFUSE_LIBRARY", None)
            if saved is not None:
                os.environ["TILEFUSE_LIBRARY"] = saved


@unittest.skipUnless(TILEFUSE, "no tilefuse binary")
class TilefuseSide(unittest.TestCase):
    def test_bench_run_table(self):
        args = ct.parse_args(["--tilefuse-device", "cpu", "--repeats", "1"])
        results = []
        with tempfile.TemporaryDirectory() as tmp:
            for case, descrs in [("dequant_int8_prologue", ["<f4", "|i1", "<f4"]),
                                 ("gather_negative_index", ["<f4", "<f4", "<i8"])]:
                path = os.path.join(REPO, "tests/cases", case + ".tfs")
                prog = ct.translate_tfs(ct.read_text(path))
                ind, outd = os.path.join(tmp, case, "in"), os.path.join(tmp, case, "out")
                b = ct.tilefuse_bench(TILEFUSE, path, ind, args)
                self.assertNotIn("error", b)
                for p, d in zip(prog.params, descrs):
                    descr, shape, data = ct.read_npy_raw(os.path.join(ind, p.name + ".npy"))
                    self.assertEqual((descr, shape), (d, p.shape), p.name)
                    if p.lo is not None:  # the range is honoured (i64 values)
                        vals = [int.from_bytes(data[i:i + 8], "little", signed=True)
                                for i in range(0, len(data), 8)]
                        self.assertTrue(all(p.lo <= v < p.hi for v in vals))
                picked = ct.pick_rows(b["report"])
                self.assertIsNotNone(picked["fused"])
                self.assertIsNotNone(picked["chosen"])
                tr = ct.tilefuse_run(TILEFUSE, path, prog, ind, outd, args)
                self.assertNotIn("error", tr)
                self.assertEqual(len(tr["outputs"]), 1)
                self.assertTrue(os.path.exists(tr["outputs"][0]))
                results.append({"program": case, "shapes": prog.shape_summary(), "rows": picked,
                                "torch": {"eager_us": 2 * picked["chosen"]["median_us"],
                                          "eager_vs_tilefuse": 1e-3},
                                "notes": ["torch.compile failed: x"]})
        # The second program also has its interleaved pair: tilefuse a quarter of eager's
        # interleaved figure (which differs from eager's own: the ratio is within the pair).
        eager = results[1]["torch"]["eager_us"]
        results[1]["torch"]["eager_interleaved_us"] = 3 * eager
        results[1]["torch"]["tilefuse_us"] = 3 * eager / 4
        table, notes = ct.render_table(results)
        lines = table.splitlines()
        self.assertEqual(len(lines), 4)
        self.assertIn("tf/eager", lines[0])
        self.assertIn("tf/eager, interleaved", lines[0])
        self.assertIn("0.50", lines[2])
        self.assertIn("0.25", lines[3])
        self.assertNotIn("0.25", lines[2])
        self.assertNotIn("1.50", lines[3])  # (tilefuse's pair figure over eager's own)
        self.assertEqual(notes, ["dequant_int8_prologue: torch.compile failed: x",
                                 "gather_negative_index: torch.compile failed: x"])

    def test_main(self):
        """main() end to end with the torch child replaced: the table, the notes, --json and
        --table-from."""
        calls = []

        def fake_worker(spec, args):
            calls.append(spec)
            return {"eager_us": 100.0, "compile_us": 50.0, "eager_vs_tilefuse": 2e-3,
                    "compile_vs_eager": 1e-3, "timer": "fake", "torch_version": "0.test",
                    "device": "fake GPU", "notes": []}
        saved = ct.run_worker, ct.torch_unavailable
        ct.run_worker, ct.torch_unavailable = fake_worker, lambda: None
        try:
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "r.json")
                progs = [os.path.join(REPO, "tests/cases", c + ".tfs")
                         for c in ("pointwise_both_operands", "gather_out_of_range")]
                text = self.capture(["--tilefuse", TILEFUSE, "--tilefuse-device", "cpu",
                                     "--repeats", "1", "--json", out] + progs)
                with open(out) as f:
                    j = json.load(f)
                again = self.capture(["--table-from", out])
        finally:
            ct.run_worker, ct.torch_unavailable = saved
        self.assertEqual(len(calls), 1)  # no torch run where tilefuse failed
        self.assertTrue(calls[0]["tilefuse_outputs"][0].endswith("out0.npy"))
        self.assertEqual([r["program"] for r in j["results"]],
                         ["pointwise_both_operands", "gather_out_of_range"])
        self.assertIn("tilefuse vs PyTorch on fake GPU (torch 0.test", text)
        row = [ln for ln in text.splitlines() if ln.startswith("pointwise_both_operands")][0]
        self.assertIn("100.0", row)
        self.assertIn("2.0e-03", row)
        self.assertIn("note: gather_out_of_range: tilefuse bench failed (torch skipped)", text)
        self.assertEqual(text.splitlines()[-4:], again.splitlines()[-4:])

    @staticmethod
    def capture(argv):
        import contextlib
        import io
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            rc = ct.main(argv)
        assert rc == 0, rc
        return buf.getvalue()

    def test_failing_program_is_reported(self):
        args = ct.parse_args(["--tilefuse-device", "cpu", "--repeats", "1"])
        with tempfile.TemporaryDirectory() as tmp:
            b = ct.tilefuse_bench(TILEFUSE, os.path.join(REPO, "tests/cases/gather_out_of_range.tfs"),
                                  tmp, args)
        self.assertIn("error", b)
        self.assertIn("idx", b["error"])


class Skip(unittest.TestCase):
    def run_with_torch(self, init_py):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "torch"))
            with open(os.path.join(tmp, "torch", "__init__.py"), "w") as f:
                f.write(init_py)
            env = dict(os.environ, PYTHONPATH=tmp)
            return subprocess.run([sys.executable, os.path.join(HERE, "compare_torch.py")],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env, timeout=120)

    def test_no_torch(self):
        p = self.run_with_torch("raise ImportError('No module named torch (test)')\n")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith("compare_torch: skipped: cannot import torch"),
                        p.stdout)

    def test_no_cuda(self):
        p = self.run_with_torch("__version__ = '0.test'\n"
                                "class cuda:\n"
                                "    @staticmethod\n"
                                "    def is_available():\n"
                                "        return False\n")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(),
                         "compare_torch: skipped: torch 0.test sees no CUDA device")


if __name__ == "__main__":
    unittest.main(verbosity=2)
