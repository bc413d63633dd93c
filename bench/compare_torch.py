#!/usr/bin/env python3
"""tilefuse next to PyTorch on the same programs and the same inputs (issue 5 part 3).

    python3 bench/compare_torch.py [--tilefuse PATH] [--repeats 100] [--no-compile]
                                   [--json OUT] [PROG.tfs ...]

With no program, every bench/programs/*.tfs (`--cases` adds tests/cases/*.tfs). For each program:

 1. `tilefuse bench PROG --json --save-inputs DIR` times tilefuse's plans (fused, unfused, the
    unfused plan with cuBLASLt GEMMs, those GEMMs alone, the tuned `chosen` row) and writes the
    exact inputs it timed as DIR/<param>.npy. Its rel_err (against tilefuse's f64 oracle) goes into
    the table.
 2. `tilefuse run PROG --input p=DIR/p.npy ... --save-output OUTDIR` runs the program once more on
    those inputs (the cross-check below; --no-cross-check skips it).
 3. In a child process (so that a CUDA error in one program cannot poison the others), the .tfs
    program becomes a Python function: its source with the parameter annotations (dtype, shape and
    `in [lo, hi)`) removed, exec'd with `torch`, `F` = torch.nn.functional and the bare .tfs dtype
    names (f16, bf16, ...) in scope; decorators are dropped, and the few .tfs call forms that are
    not torch's (torch.gelu, x.silu(), torch.relu(x, inplace=False), ...) are rewritten to the
    torch.nn.functional ones (see _Shims). The inputs are read from
    the .npy files (bf16/f8 parameters were written as exact f32 and are cast back), and the
    function runs in PyTorch eager and under torch.compile(mode="max-autotune-no-cudagraphs").
    Checks: eager against tilefuse's output (`eager~tf`, ‖a−b‖/‖b‖) and torch.compile against eager
    (`compile~eager`).
 4. Timing: triton.testing.do_bench (median, L2 flushed by do_bench; --warmup-ms/--rep-ms) where
    Triton is installed, else (or with --timer events) CUDA events around each call after zeroing a
    256 MiB buffer, median of --repeats calls after --warmup calls — tilefuse bench's own method.
 5. In the same child, unless --no-same-timer: tilefuse's tuned choice (the `tilefuse` package in
    python/, over the libtilefuse.so next to the binary or $TILEFUSE_LIBRARY, with the caches
    bench just filled) is called on the same torch tensors, checked against eager, and timed
    together with eager, the two calls alternating (`eager µs, interleaved`, `tf µs,
    interleaved`): one method for both sides in the same power state. Timed one after the other,
    a 1.4 ms GEMM timed second runs at a lower clock once the GPU reaches its power cap
    (time_interleaved; bench/RESULTS.md, session 37), so this pair is the fair ratio.

One table of times and ratios is printed at the end (ratio < 1: tilefuse is faster), and --json OUT
writes everything. Without torch, or without a CUDA device, it prints
"compare_torch: skipped: <reason>" and exits 0. A program that tilefuse fails on is reported in the
table (its torch runs are skipped: the inputs may be invalid, e.g. an index out of range, which
would be a device-side assert in PyTorch).
"""

from __future__ import annotations

import argparse
import ast
import glob
import json
import math
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# --- The .tfs program as Python -----------------------------------------------------------------

# Every dtype spelling a .tfs parameter annotation accepts (src/core/dtype.cpp parse_dtype),
# mapped to the canonical .tfs name.
_DTYPE_SPELLINGS = {
    "f16": "f16", "float16": "f16", "half": "f16",
    "bf16": "bf16", "bfloat16": "bf16",
    "f32": "f32", "float32": "f32", "float": "f32",
    "f64": "f64", "float64": "f64", "double": "f64",
    "i8": "i8", "int8": "i8",
    "u8": "u8", "uint8": "u8",
    "i32": "i32", "int32": "i32", "int": "i32",
    "i64": "i64", "int64": "i64", "long": "i64",
    "bool": "bool",
    "f8e4m3": "f8e4m3", "float8_e4m3fn": "f8e4m3",
    "f8e5m2": "f8e5m2", "float8_e5m2": "f8e5m2",
}
# Canonical .tfs dtype -> torch attribute name.
TORCH_DTYPE = {
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "i8": "int8", "u8": "uint8", "i32": "int32", "i64": "int64", "bool": "bool",
    "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2",
}
# Names a .tfs expression may use as a dtype (src/frontend/parser.cpp bare_dtype): the canonical
# names; `float`, `int` and `bool` are Python's own types, which torch maps as .tfs does
# (float -> float64, int -> int64, bool -> bool), so they are not shadowed.
BARE_DTYPES = [d for d in TORCH_DTYPE if d != "bool"]


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def canonical_dtype(spelling):
    s = spelling[len("torch."):] if spelling.startswith("torch.") else spelling
    if s not in _DTYPE_SPELLINGS:
        raise ValueError(f"unknown dtype '{spelling}'")
    return _DTYPE_SPELLINGS[s]


class Param:
    def __init__(self, name, dtype, shape, lo=None, hi=None):
        self.name, self.dtype, self.shape, self.lo, self.hi = name, dtype, shape, lo, hi

    def summary(self):
        return f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"

    def as_dict(self):
        d = {"name": self.name, "dtype": self.dtype, "shape": self.shape}
        if self.lo is not None:
            d["range"] = [self.lo, self.hi]
        return d


class TfsProgram:
    def __init__(self, name, params, python_source, tree):
        self.name, self.params, self.python_source, self.tree = name, params, python_source, tree

    def shape_summary(self):
        return " ".join(p.summary() for p in self.params)


_WS = re.compile(r"(?:\s|#[^\n]*|\\\n)*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*")
_INT = re.compile(r"[+-]?\s*(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9][0-9_]*)")
_DEF = re.compile(r"^def[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(", re.M)


def _int(text):
    return int(re.sub(r"\s", "", text), 0)


def translate_tfs(text):
    """Parses a .tfs program's header; returns a TfsProgram whose python_source is the program
    with the parameter annotations removed (line numbers kept). Raises ValueError on a header it
    does not understand (tilefuse's own parser is the judge of the rest)."""
    m = _DEF.search(text)
    if not m:
        raise ValueError("no 'def NAME(' at the start of a line")
    name = m.group(1)
    pos = m.end()
    params = []

    def skip(p):
        return _WS.match(text, p).end()

    def expect(p, what, regex=None, literal=None):
        p = skip(p)
        if literal is not None:
            if not text.startswith(literal, p):
                raise ValueError(f"expected {what} at offset {p}: {text[p:p + 20]!r}")
            return p + len(literal), literal
        mm = regex.match(text, p)
        if not mm:
            raise ValueError(f"expected {what} at offset {p}: {text[p:p + 20]!r}")
        return mm.end(), mm.group(0)

    pos = skip(pos)
    while not text.startswith(")", pos):
        pos, pname = expect(pos, "a parameter name", _NAME)
        pos, _ = expect(pos, "':'", literal=":")
        pos, dtext = expect(pos, "a dtype", _DOTTED)
        dtype = canonical_dtype(re.sub(r"\s", "", dtext))
        pos, _ = expect(pos, "'['", literal="[")
        shape = []
        pos = skip(pos)
        while not text.startswith("]", pos):
            pos, d = expect(pos, "a dimension", _INT)
            shape.append(_int(d))
            pos = skip(pos)
            if text.startswith(",", pos):
                pos = skip(pos + 1)
            elif not text.startswith("]", pos):
                raise ValueError(f"expected ',' or ']' in the shape of '{pname}'")
        pos += 1
        lo = hi = None
        p2 = skip(pos)
        mm = re.compile(r"in\b").match(text, p2)
        if mm:
            pos, _ = expect(mm.end(), "'['", literal="[")
            pos, lo_t = expect(pos, "the range's lower bound", _INT)
            pos, _ = expect(pos, "','", literal=",")
            pos, hi_t = expect(pos, "the range's upper bound", _INT)
            pos, _ = expect(pos, "')'", literal=")")
            lo, hi = _int(lo_t), _int(hi_t)
        params.append(Param(pname, dtype, shape, lo, hi))
        pos = skip(pos)
        if text.startswith(",", pos):
            pos = skip(pos + 1)
        elif not text.startswith(")", pos):
            raise ValueError(f"expected ',' or ')' after parameter '{pname}' at offset {pos}")
    pos += 1  # ')'
    # An optional `-> annotation` (documentation only), then ':'.
    p2 = skip(pos)
    if text.startswith("->", p2):
        depth, p2 = 0, p2 + 2
        while p2 < len(text):
            c = text[p2]
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif c == ":" and depth == 0:
                break
            p2 += 1
    p2 = skip(p2)
    if not text.startswith(":", p2):
        raise ValueError(f"expected ':' after the parameter list of '{name}'")
    header = text[m.start():p2 + 1]
    newlines = "\n" * header.count("\n")  # keep the body's line numbers
    new_header = f"def {name}({', '.join(p.name for p in params)}{newlines}):"
    source = text[:m.start()] + new_header + text[p2 + 1:]
    tree = ast.parse(source)  # a SyntaxError here is a bug of this translation
    tree = _apply_shims(tree, name, [p.name for p in params])
    return TfsProgram(name, params, ast.unparse(tree), tree)


# --- Where a .tfs builtin is not the same torch name ---------------------------------------------
#
# Every builtin of src/frontend/builtins.cpp is a torch name in at least one form, but not in all
# the forms .tfs accepts: gelu and silu exist only as torch.nn.functional.gelu/silu (PyTorch's
# native functions with python_module: nn), not as torch.gelu or x.gelu(); torch.relu and x.relu()
# take no `inplace` keyword (.tfs accepts inplace=False); torch.permute takes its dims as one
# tuple. These calls are rewritten in the program's AST; nothing is patched into torch. So is
# `a += b` (a rebinding in .tfs, an in-place write in PyTorch): `a = a + b`.

_MODULES = {"torch", "torch.nn", "torch.nn.functional"}
_NN_ONLY = {"gelu", "silu"}
_SHIM_F = "__tf_F"  # torch.nn.functional under a name no program can shadow


class _Shims(ast.NodeTransformer):
    def __init__(self, aliases, functions):
        self.aliases = aliases      # name -> module path
        self.functions = functions  # name -> "module.function" (from-imports)

    def _module_path(self, node):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.aliases:
            path = ".".join([self.aliases[node.id]] + parts[::-1])
            return path if path in _MODULES else None
        return None

    @staticmethod
    def _f(name):
        return ast.Attribute(value=ast.Name(id=_SHIM_F, ctx=ast.Load()), attr=name, ctx=ast.Load())

    @staticmethod
    def _drop_inplace(node):
        node.keywords = [k for k in node.keywords if k.arg != "inplace"]

    def _torch_fn(self, node, name):
        """node calls torch.<name> (not torch.nn.functional)."""
        if name in _NN_ONLY:
            node.func = self._f(name)
        elif name == "relu":
            self._drop_inplace(node)
        elif name == "permute" and len(node.args) > 2:
            node.args = [node.args[0], ast.Tuple(elts=node.args[1:], ctx=ast.Load())]
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute):
            mod = self._module_path(f.value)
            if mod == "torch" or mod == "torch.nn":
                return self._torch_fn(node, f.attr)
            if mod is None:  # a method
                if f.attr in _NN_ONLY:
                    return ast.Call(func=self._f(f.attr), args=[f.value] + node.args,
                                    keywords=node.keywords)
                if f.attr == "relu":
                    self._drop_inplace(node)
        elif isinstance(f, ast.Name) and f.id in self.functions:
            mod, _, name = self.functions[f.id].rpartition(".")
            if mod != "torch.nn.functional":
                return self._torch_fn(node, name)
        return node

    def visit_AugAssign(self, node):
        # `r += 1` rebinds r in .tfs (values are immutable); in PyTorch it would write into the
        # tensor, which may be an input (timed again and again) or a view of one.
        self.generic_visit(node)
        load = ast.Name(id=node.target.id, ctx=ast.Load())
        return ast.Assign(targets=[node.target], value=ast.BinOp(left=load, op=node.op,
                                                                 right=node.value))

    def visit_ImportFrom(self, node):
        # `from torch import gelu` -> from torch.nn.functional
        if node.module in ("torch", "torch.nn") and any(a.name in _NN_ONLY for a in node.names):
            keep = [a for a in node.names if a.name not in _NN_ONLY]
            moved = [a for a in node.names if a.name in _NN_ONLY]
            out = [ast.ImportFrom(module="torch.nn.functional", names=moved, level=0)]
            if keep:
                out.insert(0, ast.ImportFrom(module=node.module, names=keep, level=0))
            return out
        return node


def _apply_shims(tree, fname, param_names):
    aliases = {"torch": "torch", "F": "torch.nn.functional"}
    functions = {}
    fdef = None
    for st in tree.body:
        if isinstance(st, ast.Import):
            for a in st.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    aliases[a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(st, ast.ImportFrom) and st.module and st.module != "__future__":
            for a in st.names:
                full = f"{st.module}.{a.name}"
                if full in _MODULES:
                    aliases[a.asname or a.name] = full
                else:
                    functions[a.asname or a.name] = full
        elif isinstance(st, ast.FunctionDef) and st.name == fname:
            fdef = st
    if fdef is None:
        raise ValueError(f"no function '{fname}' in the translation")
    fdef.decorator_list = []  # e.g. @torch.compile: the script decides how the program runs
    # A parameter or a variable shadows a module or function alias.
    local = set(param_names)
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            local.add(n.id)
    for n in local:
        aliases.pop(n, None)
        functions.pop(n, None)
    tree = _Shims(aliases, functions).visit(tree)
    return ast.fix_missing_locations(tree)


def make_namespace(torch):
    """The globals a translated program runs with: torch, F and the bare .tfs dtype names."""
    ns = {"torch": torch, "F": torch.nn.functional, _SHIM_F: torch.nn.functional,
          "__name__": "tfs_program"}
    for d in BARE_DTYPES:
        if hasattr(torch, TORCH_DTYPE[d]):
            ns[d] = getattr(torch, TORCH_DTYPE[d])
    return ns


def build_function(prog, torch, filename="<tfs>"):
    ns = make_namespace(torch)
    exec(compile(prog.tree, filename, "exec"), ns)
    return ns[prog.name]


# --- .npy (what tilefuse's src/io/npy.cpp writes) without NumPy --------------------------------

NPY_TORCH = {"|b1": "bool", "|u1": "uint8", "|i1": "int8", "<i4": "int32", "<i8": "int64",
             "<f2": "float16", "<f4": "float32", "<f8": "float64",
             "<u1": "uint8", "<i1": "int8", "=i4": "int32", "=i8": "int64", "=f2": "float16",
             "=f4": "float32", "=f8": "float64", "<b1": "bool"}


def read_npy_raw(path):
    """(descr, shape, data bytes) of a C-order .npy file (versions 1-3)."""
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    major = blob[6]
    if major == 1:
        (hlen,) = struct.unpack_from("<H", blob, 8)
        start = 10
    else:
        (hlen,) = struct.unpack_from("<I", blob, 8)
        start = 12
    header = ast.literal_eval(blob[start:start + hlen].decode("latin-1" if major < 3 else "utf-8"))
    if header.get("fortran_order"):
        raise ValueError(f"{path}: Fortran order is not supported")
    shape = [int(d) for d in header["shape"]]
    return header["descr"], shape, blob[start + hlen:]


def load_npy_torch(path, torch, dtype=None, device="cpu"):
    """The .npy file as a torch tensor, cast to `dtype` (a torch dtype) when given."""
    descr, shape, data = read_npy_raw(path)
    if descr not in NPY_TORCH:
        raise ValueError(f"{path}: unsupported .npy dtype {descr}")
    tdt = getattr(torch, NPY_TORCH[descr])
    numel = math.prod(shape)
    if numel == 0:
        t = torch.empty(shape, dtype=tdt)
    else:
        item = torch.empty((), dtype=tdt).element_size()
        t = torch.frombuffer(bytearray(data[:numel * item]), dtype=tdt).reshape(shape)
    t = t.to(device)
    if dtype is not None and t.dtype != dtype:
        t = t.to(dtype)  # bf16/f8 were written as exact f32
    return t.contiguous()


# --- tilefuse ----------------------------------------------------------------------------------


def find_tilefuse(explicit):
    if explicit:
        return explicit
    for c in ("build/tilefuse", "build-py/tilefuse", "build-release/tilefuse"):
        p = os.path.join(REPO, c)
        if os.access(p, os.X_OK):
            return p
    return shutil.which("tilefuse")


def tilefuse_library(tf):
    """The libtilefuse.so the same-timer column loads: $TILEFUSE_LIBRARY, else the one next to
    the tilefuse binary `tf`; None when there is none."""
    env = os.environ.get("TILEFUSE_LIBRARY")
    if env:
        return os.path.abspath(env) if os.path.exists(env) else None
    lib = os.path.join(os.path.dirname(os.path.abspath(tf)), "libtilefuse.so")
    return lib if os.path.exists(lib) else None


def run_cmd(cmd, timeout):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.time() - t0
    except subprocess.TimeoutExpired as e:
        return 124, e.stdout or "", f"timed out after {timeout} s", time.time() - t0


def last_line(s):
    """The last line of a tool's output that says what went wrong: the last `error:` line (a
    tilefuse diagnostic ends with the source line and a caret under it), else the last line."""
    lines = [x for x in (s or "").strip().splitlines() if x.strip()]
    errors = [x for x in lines if "error:" in x]
    return (errors or lines or [""])[-1]


def tilefuse_bench(tf, prog_path, inputs_dir, args):
    cmd = [tf, "bench", prog_path, "--json", "--save-inputs", inputs_dir,
           "--device", args.tilefuse_device, "--seed", str(args.seed),
           "--repeats", str(args.repeats)]
    if args.tilefuse_args:
        cmd += args.tilefuse_args.split()
    rc, out, err, secs = run_cmd(cmd, args.timeout)
    res = {"command": cmd, "rc": rc, "seconds": round(secs, 1)}
    if rc != 0:
        res["error"] = last_line(err) or last_line(out) or f"exit {rc}"
        return res
    try:
        res["report"] = json.loads(out[out.index("{"):])
    except (ValueError, json.JSONDecodeError) as e:
        res["error"] = f"cannot parse tilefuse bench --json: {e}"
    return res


def tilefuse_run(tf, prog_path, prog, inputs_dir, out_dir, args):
    cmd = [tf, "run", prog_path, "--device", args.tilefuse_device, "--save-output", out_dir]
    for p in prog.params:
        cmd += ["--input", f"{p.name}={os.path.join(inputs_dir, p.name + '.npy')}"]
    rc, out, err, secs = run_cmd(cmd, args.timeout)
    res = {"rc": rc, "seconds": round(secs, 1)}
    if rc != 0:
        res["error"] = last_line(err) or last_line(out) or f"exit {rc}"
        return res
    # `saved PATH` lines come in output order.
    res["outputs"] = [ln[len("saved "):].strip() for ln in out.splitlines()
                      if ln.startswith("saved ")]
    return res


def pick_rows(report):
    rows = {r.get("name"): r for r in (report or {}).get("rows", [])}

    def t(name):
        r = rows.get(name)
        if r is None or not r.get("median_us") or r["median_us"] <= 0:
            return None
        return r

    chosen = t("chosen")
    chosen_from = "chosen"
    if chosen is None:
        cands = [r for r in (t("fused"), t("unfused")) if r is not None]
        chosen = min(cands, key=lambda r: r["median_us"]) if cands else None
        chosen_from = chosen["name"] if chosen else None
    return {"chosen": chosen, "chosen_from": chosen_from, "fused": t("fused"),
            "unfused": t("unfused"), "cublaslt": t("unfused+cuBLASLt"),
            "gemm_only": t("cuBLASLt GEMM only")}


# --- The torch side (in a child process) ---------------------------------------------------------


def rel_diff(torch, a, b):
    """‖a−b‖/‖b‖ in f64 (0 when both are 0), over every output."""
    worst = 0.0
    if not isinstance(a, (tuple, list)):
        a = (a,)
    if not isinstance(b, (tuple, list)):
        b = (b,)
    if len(a) != len(b):
        return float("nan")
    for x, y in zip(a, b):
        if tuple(x.shape) != tuple(y.shape):
            return float("nan")
        x = x.detach().to(torch.float64)
        y = y.detach().to(device=x.device, dtype=torch.float64)
        num = torch.linalg.vector_norm(x - y).item()
        den = torch.linalg.vector_norm(y).item()
        err = num / den if den > 0 else (0.0 if num == 0 else float("inf"))
        if not math.isfinite(err) or err > worst:
            worst = err
    return worst


def time_fn(torch, fn, spec):
    """Median µs of fn(); (value, method)."""
    if spec["timer"] in ("auto", "do_bench"):
        try:
            import triton.testing as tt
            try:
                ms = tt.do_bench(fn, warmup=spec["warmup_ms"], rep=spec["rep_ms"],
                                 return_mode="median")
            except TypeError:  # an older Triton without return_mode
                ms = tt.do_bench(fn, warmup=spec["warmup_ms"], rep=spec["rep_ms"],
                                 quantiles=[0.5])
            if isinstance(ms, (list, tuple)):
                ms = ms[0]
            return float(ms) * 1e3, "triton.testing.do_bench median"
        except ImportError:
            if spec["timer"] == "do_bench":
                raise
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for _ in range(spec["warmup"]):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(spec["repeats"])]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(spec["repeats"])]
    for s, e in zip(starts, ends):
        flush.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    n = len(times)
    med = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    return med * 1e3, f"CUDA events median of {n}, 256 MiB L2 flush"


INTERLEAVED_BATCH = 16  # rounds enqueued behind one GPU hold (even: each order as often)
HOLD_MAX_MS = 50.0  # the longest hold (the first batch's is 20 ms)


def gpu_hold(torch):
    """A function hold(ms) that keeps the GPU's stream busy for about ms milliseconds
    (torch.cuda._sleep spins for a number of cycles; the cycles per ms are measured here once),
    or None where this torch has no torch.cuda._sleep. Work the host enqueues behind a hold
    starts when the hold ends, so CUDA events around it time the GPU and not the host's launch
    rate: a 30 µs program launched from Python as two ops otherwise reads the host's 50-110 µs
    (bench/RESULTS.md, session 38)."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        return None
    cycles = 1 << 20
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    sleep(cycles)
    e.record()
    torch.cuda.synchronize()
    per_ms = cycles / max(s.elapsed_time(e), 1e-3)
    return lambda ms: sleep(max(1, int(ms * per_ms)))


def time_interleaved(torch, fns, spec):
    """Median µs of each of `fns`, timed in alternation so that every side sees the same power
    state: a GPU at its power cap lowers its clock over hundreds of ms, so of two kernels timed
    one after the other the second runs at a lower clock (on an H100, a 1.4 ms bf16 GEMM: eager's
    cuBLAS 1259 µs timed first, ours 1402 µs after it; both 1385-1430 µs in sustained loops,
    bench/RESULTS.md, session 37). First the fns run in turn for spec["settle_ms"] ms (the power
    state settles); then rounds of one call each, the order reversed every other round, each call
    after a 256 MiB L2 flush and between CUDA events, for at least spec["repeats"] rounds and at
    least spec["pair_ms"] ms (at most 100000 rounds). The rounds go in batches of
    INTERLEAVED_BATCH, each enqueued behind a GPU hold (gpu_hold) longer than the host took to
    enqueue the batch before, so that every call's events time the GPU alone; each batch ends in
    a synchronize. Returns ([µs per fn], method)."""
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for _ in range(max(1, spec["warmup"])):
        for f in fns:
            f()
    torch.cuda.synchronize()
    hold = gpu_hold(torch)
    start, settled, rounds = time.perf_counter(), 0, 0
    while True:
        for _ in range(4):
            for f in fns:
                flush.zero_()
                f()
        torch.cuda.synchronize()
        rounds += 4
        settled = time.perf_counter() - start
        if settled * 1e3 >= spec["settle_ms"]:
            break
    per_round = settled / rounds
    n = min(100000, max(spec["repeats"], math.ceil(spec["pair_ms"] / 1e3 / per_round)))
    events = [[] for _ in fns]
    order = list(range(len(fns)))
    lead_ms, host_ms = 20.0, 0.0  # the first batch's hold is generous; then 1.5x the host's time
    r = 0
    while r < n:
        t0 = time.perf_counter()
        if hold:
            hold(lead_ms)
        for r in range(r, min(n, r + INTERLEAVED_BATCH)):
            for i in (order if r % 2 == 0 else order[::-1]):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                flush.zero_()
                s.record()
                fns[i]()
                e.record()
                events[i].append((s, e))
        r += 1
        # (capped: a batch that filled CUDA's launch queue waited for its own hold, and a hold
        # grown from that wait would grow again at every batch)
        host_ms = min(HOLD_MAX_MS, max(host_ms, (time.perf_counter() - t0) * 1e3))
        lead_ms = min(HOLD_MAX_MS, 1.5 * host_ms + 0.1)
        torch.cuda.synchronize()
    medians = []
    for ev in events:
        times = sorted(s.elapsed_time(e) for s, e in ev)
        k = len(times)
        medians.append(1e3 * (times[k // 2] if k % 2 else 0.5 * (times[k // 2 - 1] + times[k // 2])))
    held = (f"each batch of {INTERLEAVED_BATCH} rounds behind a GPU hold" if hold else
            "no GPU hold (torch.cuda._sleep missing): a short program may read the host's rate")
    return medians, (f"interleaved CUDA events, median of {n} rounds after {settled:.1f} s settling, "
                     f"256 MiB L2 flush, {held}")


def tilefuse_same_timer(torch, fn, args, spec, res):
    """tilefuse's tuned choice called from Python (the tilefuse package over
    spec["tilefuse_library"], the kernel and tuning caches `tilefuse bench` just filled) on the
    torch tensors eager ran on, timed together with eager by time_interleaved: one method for
    both sides, in the same power state. Fills res["tilefuse_us"], res["eager_interleaved_us"],
    res["interleaved_timer"] and res["tilefuse_py_vs_eager"] (its outputs against eager's), or a
    note saying why not."""
    try:
        if spec["python_dir"] not in sys.path:
            sys.path.insert(0, spec["python_dir"])
        os.environ["TILEFUSE_LIBRARY"] = spec["tilefuse_library"]
        import tilefuse
        k = tilefuse.compile(spec["program"], device="cuda", plan="auto")
        out = k(*args)
        torch.cuda.synchronize()
        res["tilefuse_py_vs_eager"] = rel_diff(torch, out, fn(*args))
        del out
        (res["eager_interleaved_us"], res["tilefuse_us"]), res["interleaved_timer"] = \
            time_interleaved(torch, [lambda: fn(*args), lambda: k(*args)], spec)
    except Exception as e:  # noqa: BLE001 - reported as a note; eager's figures stand
        msg = (f"{type(e).__name__}: {e}".strip().splitlines() or ["?"])[0][:300]
        res["notes"].append("tilefuse timed in alternation with eager failed: " + msg)


def torch_worker(spec, res):
    """Runs one program through torch eager and torch.compile, filling `res` as it goes (so that
    an exception leaves what was measured before it)."""
    import torch
    res["torch_version"] = torch.__version__
    res["device"] = torch.cuda.get_device_name()
    try:
        import triton
        res["triton_version"] = triton.__version__
    except ImportError:
        res["triton_version"] = None
    torch.backends.cuda.matmul.allow_tf32 = False  # tilefuse's f32 GEMM is exact f32
    torch.backends.cudnn.allow_tf32 = False
    prog = translate_tfs(read_text(spec["program"]))
    fn = build_function(prog, torch, spec["program"])
    args = [load_npy_torch(os.path.join(spec["inputs_dir"], p.name + ".npy"), torch,
                           getattr(torch, TORCH_DTYPE[p.dtype]), "cuda") for p in prog.params]
    with torch.no_grad():
        out = fn(*args)
        torch.cuda.synchronize()
        outs = out if isinstance(out, (tuple, list)) else (out,)
        res["outputs"] = [{"dtype": str(o.dtype).replace("torch.", ""), "shape": list(o.shape)}
                          for o in outs]
        if spec.get("tilefuse_outputs"):
            tf_outs = [load_npy_torch(p, torch, None, "cuda") for p in spec["tilefuse_outputs"]]
            res["eager_vs_tilefuse"] = rel_diff(torch, outs, tf_outs)
            del tf_outs
        del out, outs
        res["eager_us"], res["timer"] = time_fn(torch, lambda: fn(*args), spec)
        if spec.get("tilefuse_library"):
            tilefuse_same_timer(torch, fn, args, spec, res)
        if spec["compile"]:
            try:
                t0 = time.time()
                cfn = torch.compile(fn, mode="max-autotune-no-cudagraphs", dynamic=False)
                cout = cfn(*args)
                torch.cuda.synchronize()
                res["compile_seconds"] = round(time.time() - t0, 1)
                res["compile_vs_eager"] = rel_diff(torch, cout, fn(*args))
                del cout
                res["compile_us"], _ = time_fn(torch, lambda: cfn(*args), spec)
            except Exception as e:  # noqa: BLE001 - reported as a note
                msg = (f"{type(e).__name__}: {e}".strip().splitlines() or ["?"])[0][:300]
                res["compile_error"] = msg
                res["notes"].append("torch.compile failed: " + msg)
    return res


def run_worker(spec, args):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
        spec_path = f.name
    out_path = spec_path + ".out"
    try:
        cmd = [sys.executable, os.path.abspath(__file__), "--_worker", spec_path, out_path]
        rc, out, err, secs = run_cmd(cmd, args.timeout)
        res = {"notes": []}
        if os.path.exists(out_path):
            with open(out_path) as f:
                res = json.load(f)
        else:
            res["error"] = f"torch child exited {rc}: " + (last_line(err) or last_line(out))
        res["child_seconds"] = round(secs, 1)
        if "error" in res:
            res["stderr_tail"] = (err or "")[-4000:]
        return res
    finally:
        for p in (spec_path, out_path):
            if os.path.exists(p):
                os.unlink(p)


def worker_main(spec_path, out_path):
    with open(spec_path) as f:
        spec = json.load(f)
    res = {"notes": []}
    try:
        torch_worker(spec, res)
    except Exception as e:  # noqa: BLE001
        res["error"] = (f"{type(e).__name__}: {e}".strip().splitlines() or ["?"])[0][:400]
        res["traceback"] = traceback.format_exc()
    with open(out_path, "w") as f:
        json.dump(res, f, default=float)
    return 0


# --- The table -----------------------------------------------------------------------------------


def fmt_us(v):
    return "-" if v is None else (f"{v:.1f}" if v < 1e4 else f"{v:.0f}")


def fmt_err(v):
    if v is None:
        return "-"
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return f"{v:.1e}"


def fmt_ratio(a, b):
    if a is None or b is None or b <= 0:
        return "-"
    return f"{a / b:.2f}"


def render_table(results):
    head = ["program", "shapes", "eager µs", "max-autotune µs", "tilefuse µs", "fused µs",
            "unfused+cuBLASLt µs", "cuBLASLt GEMM µs", "tf/eager", "tf/max-autotune",
            "eager µs, interleaved", "tf µs, interleaved", "tf/eager, interleaved",
            "tf rel_err", "eager~tf",
            "compile~eager"]
    rows = []
    notes = []
    for r in results:
        rw = r.get("rows") or {}
        tq = r.get("torch") or {}

        def us(key):
            row = rw.get(key)
            return row["median_us"] if row else None

        chosen = us("chosen")
        # (results written before session 37 timed tilefuse after eager, not interleaved)
        pair_eager = tq.get("eager_interleaved_us", tq.get("eager_us") if "tilefuse_us" in tq
                            else None)
        tf_err = (rw.get("chosen") or {}).get("rel_err") if rw.get("chosen") else None
        label = fmt_us(chosen)
        if chosen is not None and rw.get("chosen_from") != "chosen":
            label += f" ({rw.get('chosen_from')})"
        rows.append([r["program"], r.get("shapes", "-"), fmt_us(tq.get("eager_us")),
                     fmt_us(tq.get("compile_us")), label, fmt_us(us("fused")),
                     fmt_us(us("cublaslt")), fmt_us(us("gemm_only")),
                     fmt_ratio(chosen, tq.get("eager_us")),
                     fmt_ratio(chosen, tq.get("compile_us")), fmt_us(pair_eager),
                     fmt_us(tq.get("tilefuse_us")),
                     fmt_ratio(tq.get("tilefuse_us"), pair_eager), fmt_err(tf_err),
                     fmt_err(tq.get("eager_vs_tilefuse")), fmt_err(tq.get("compile_vs_eager"))])
        for n in r.get("notes", []):
            notes.append(f"{r['program']}: {n}")
    widths = [max(len(h), *(len(x[i]) for x in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    lines = [" | ".join(h.ljust(w) for h, w in zip(head, widths)),
             "-+-".join("-" * w for w in widths)]
    for x in rows:
        lines.append(" | ".join(c.ljust(w) if i < 2 else c.rjust(w)
                                for i, (c, w) in enumerate(zip(x, widths))))
    return "\n".join(lines), notes


# --- main ----------------------------------------------------------------------------------------


def torch_unavailable():
    """None when torch with a CUDA device is usable, else why not."""
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken install
        return f"cannot import torch ({type(e).__name__}: {e})"
    try:
        if not torch.cuda.is_available():
            return f"torch {torch.__version__} sees no CUDA device"
    except Exception as e:  # noqa: BLE001
        return f"torch.cuda.is_available() failed ({e})"
    return None


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="tilefuse vs PyTorch eager and torch.compile(max-autotune-no-cudagraphs) "
                    "on the same programs and the same inputs; one table.")
    ap.add_argument("programs", nargs="*", help="the .tfs programs (default: bench/programs/*.tfs)")
    ap.add_argument("--cases", action="store_true", help="also every tests/cases/*.tfs")
    ap.add_argument("--tilefuse", help="the tilefuse binary (default: build/tilefuse, "
                                       "build-py/tilefuse, then PATH)")
    ap.add_argument("--repeats", type=int, default=100,
                    help="timed runs: tilefuse bench --repeats, and the CUDA-events timer")
    ap.add_argument("--warmup", type=int, default=10, help="untimed runs of the CUDA-events timer")
    ap.add_argument("--timer", choices=["auto", "do_bench", "events"], default="auto",
                    help="torch timing: do_bench where Triton is installed (auto), or CUDA events")
    ap.add_argument("--warmup-ms", type=float, default=25, help="do_bench warmup (ms)")
    ap.add_argument("--rep-ms", type=float, default=100, help="do_bench rep (ms)")
    ap.add_argument("--settle-ms", type=float, default=500,
                    help="the interleaved timer: eager and tilefuse in turn for this long before "
                         "timing (the GPU's power state settles)")
    ap.add_argument("--pair-ms", type=float, default=1000,
                    help="the interleaved timer: time rounds of eager and tilefuse for at least "
                         "this long (and at least --repeats rounds)")
    ap.add_argument("--seed", type=int, default=0, help="tilefuse bench --seed (the inputs)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--no-cross-check", action="store_true",
                    help="skip tilefuse run + the eager~tf comparison")
    ap.add_argument("--no-same-timer", action="store_true",
                    help="skip timing tilefuse's chosen plan from Python, interleaved with "
                         "eager")
    ap.add_argument("--tilefuse-args", default="", help="extra tilefuse bench arguments, "
                                                        "e.g. --tilefuse-args=--retune")
    ap.add_argument("--tilefuse-device", default="cuda", choices=["cuda", "cpu"],
                    help=argparse.SUPPRESS)  # cpu: for bench/test_compare_torch.py only
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per subprocess")
    ap.add_argument("--keep", metavar="DIR", help="keep the inputs and outputs under DIR")
    ap.add_argument("--json", metavar="OUT",
                    help="write every figure as JSON to OUT (rewritten after each program)")
    ap.add_argument("--time-limit", type=float, default=0, metavar="S",
                    help="start no new program after S seconds (the rest are listed as not run)")
    ap.add_argument("--table-from", nargs="+", metavar="JSON",
                    help="only print the table of earlier --json files (several: one table)")
    return ap.parse_args(argv)


def process_program(i, n, path, tf, work, args):
    stem = os.path.splitext(os.path.basename(path))[0]
    r = {"program": stem, "path": path, "notes": []}
    try:
        prog = translate_tfs(read_text(path))
    except (OSError, ValueError, SyntaxError) as e:
        r["notes"].append(f"cannot translate: {e}")
        return r
    r["shapes"] = prog.shape_summary()
    r["params"] = [p.as_dict() for p in prog.params]
    r["python_source"] = prog.python_source
    pdir = os.path.join(work, f"{i:02d}_{stem}")
    inputs_dir, out_dir = os.path.join(pdir, "inputs"), os.path.join(pdir, "tilefuse_out")
    b = tilefuse_bench(tf, path, inputs_dir, args)
    r["tilefuse"] = b
    if "error" in b:
        r["notes"].append(f"tilefuse bench failed (torch skipped): {b['error']}")
        return r
    picked = pick_rows(b["report"])
    r["rows"] = picked
    if picked["chosen_from"] == "chosen" and picked["chosen"].get("note"):
        r["notes"].append(f"tilefuse chosen: {picked['chosen']['note']}")
    if picked["chosen_from"] not in (None, "chosen"):
        r["notes"].append(f"no chosen row: tilefuse µs is the {picked['chosen_from']} row")
    for row in b["report"].get("rows", []):
        if not row.get("median_us") and row.get("note"):
            r["notes"].append(f"tilefuse {row['name']}: {row['note']}")
    spec = {"program": os.path.abspath(path), "inputs_dir": inputs_dir,
            "compile": not args.no_compile, "timer": args.timer, "repeats": args.repeats,
            "warmup": args.warmup, "warmup_ms": args.warmup_ms, "rep_ms": args.rep_ms,
            "settle_ms": args.settle_ms, "pair_ms": args.pair_ms}
    lib = tilefuse_library(tf)
    if lib and not args.no_same_timer:
        spec["tilefuse_library"], spec["python_dir"] = lib, os.path.join(REPO, "python")
    if not args.no_cross_check:
        tr = tilefuse_run(tf, path, prog, inputs_dir, out_dir, args)
        r["tilefuse_run"] = tr
        if "error" in tr:
            r["notes"].append(f"tilefuse run failed (no eager~tf): {tr['error']}")
        else:
            spec["tilefuse_outputs"] = tr["outputs"]
    t = run_worker(spec, args)
    r["torch"] = t
    r["notes"] += t.get("notes", [])
    if "error" in t:
        r["notes"].append(f"torch failed: {t['error']}")
    return r


def print_report(results, repeats):
    table, notes = render_table(results)
    env = next((r["torch"] for r in results if (r.get("torch") or {}).get("torch_version")), {})
    print()
    print(f"tilefuse vs PyTorch on {env.get('device', '?')} (torch {env.get('torch_version', '?')}"
          f", triton {env.get('triton_version')}; torch timer: {env.get('timer', '?')}; tilefuse: "
          f"median of {repeats}, L2 flushed). µs are medians; ratios < 1: tilefuse faster.")
    print("tilefuse µs = the tuned `chosen` row; rel_err: tilefuse vs its f64 oracle; eager~tf: "
          "‖eager − tilefuse‖/‖tilefuse‖; compile~eager: ‖compile − eager‖/‖eager‖.")
    print("eager µs, interleaved / tf µs, interleaved = eager and the same tuned choice called "
          "from Python (the tilefuse package) on eager's tensors, their calls alternating after "
          "the GPU's power state settled: one method for both sides in the same power state, "
          "the fair ratio (tf/eager, interleaved). The other columns time each side alone: on "
          "1.5 ms kernels they see different power states (a burst against a sustained run at "
          "the power cap), which moves ratios by up to 11% (bench/RESULTS.md, sessions 17, 23 "
          "and 37).")
    print(table)
    for n in notes:
        print("  note: " + n)
    sys.stdout.flush()


def write_json(path, tf, args, results):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"tilefuse": tf, "repeats": args.repeats, "seed": args.seed,
                   "timer": args.timer, "results": results}, f, indent=2, default=float)
    os.replace(tmp, path)


def _on_sigterm(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv):
    if len(argv) == 3 and argv[0] == "--_worker":
        return worker_main(argv[1], argv[2])
    args = parse_args(argv)
    if args.table_from:
        results, repeats = [], "?"
        for p in args.table_from:
            with open(p) as f:
                j = json.load(f)
            results += j["results"]
            repeats = j.get("repeats", repeats)
        print_report(results, repeats)
        return 0
    why = torch_unavailable()
    if why:
        print(f"compare_torch: skipped: {why}")
        return 0
    tf = find_tilefuse(args.tilefuse)
    if not tf:
        print("compare_torch: no tilefuse binary (build it, or pass --tilefuse PATH)",
              file=sys.stderr)
        return 2
    programs = list(args.programs)
    if not programs:
        programs = sorted(glob.glob(os.path.join(HERE, "programs", "*.tfs")))
    if args.cases:
        programs += sorted(glob.glob(os.path.join(REPO, "tests", "cases", "*.tfs")))
    work = args.keep or tempfile.mkdtemp(prefix="compare_torch.")
    results = []
    t_start = time.time()
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        for i, path in enumerate(programs):
            stem = os.path.splitext(os.path.basename(path))[0]
            spent = time.time() - t_start
            if args.time_limit and spent > args.time_limit:
                results.append({"program": stem, "path": path, "notes": [
                    f"not run: --time-limit {args.time_limit} s reached ({spent:.0f} s)"]})
                continue
            print(f"[{i + 1}/{len(programs)}] {stem} ({spent:.0f} s so far)", file=sys.stderr,
                  flush=True)
            r = process_program(i, len(programs), path, tf, work, args)
            results.append(r)
            tq, rows = r.get("torch") or {}, r.get("rows") or {}
            print(f"    eager {fmt_us(tq.get('eager_us'))} µs, max-autotune "
                  f"{fmt_us(tq.get('compile_us'))} µs, tilefuse "
                  f"{fmt_us((rows.get('chosen') or {}).get('median_us'))} µs"
                  + "".join(f"\n    note: {n}" for n in r["notes"]), file=sys.stderr, flush=True)
            if args.json:
                write_json(args.json, tf, args, results)
    except KeyboardInterrupt as e:
        print(f"compare_torch: interrupted ({e}); the table has what was measured",
              file=sys.stderr)
        results.append({"program": "(interrupted)", "notes": [f"interrupted: {e}"]})
    print_report(results, args.repeats)
    if args.json:
        write_json(args.json, tf, args, results)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
