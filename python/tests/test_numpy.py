"""The Python package on numpy arrays (the CPU executor): results equal to
`tilefuse run` on the same inputs bit for bit, symbolic dims at several sizes
with one compile, several outputs, out=, strided inputs, @jit, explain, tune,
and every error as its Python exception. Runs in CI (ctest python_numpy)."""

import os
import tempfile

from _support import ROOT, fresh_seed, import_or_skip, raises, run_cli

np = import_or_skip("numpy")

import tilefuse  # noqa: E402

GATHER = (
    "def gather_mm(x: f16[T, 64], y: f16[64, 48], index: i64[M] in [-T, T)):\n"
    "    return x[index] @ y\n")

TWO_OUTPUTS = (
    "def two(x: f32[T, K], w: f32[K, N], b: f32[N]):\n"
    "    h = x @ w + b\n"
    "    return torch.relu(h), h.to(torch.float16)\n")


def rand(rng, shape, dtype):
    """Uniform in [-1, 1), no exact zeros."""
    a = rng.uniform(-1, 1, size=shape)
    a[a == 0] = 0.5
    return a.astype(dtype)


def gather_inputs(rng, T, M):
    x = rand(rng, (T, 64), np.float16)
    y = rand(rng, (64, 48), np.float16)
    index = rng.integers(-T, T, size=M).astype(np.int64) if T else np.zeros(M, np.int64)
    return x, y, index


def gather_reference(x, y, index):
    """f64 x[index] @ y, rounded to f16 once (the oracle rounded to the output dtype)."""
    return (x.astype(np.float64)[index] @ y.astype(np.float64)).astype(np.float16)


def rel_err(out, ref):
    out, ref = out.astype(np.float64), ref.astype(np.float64)
    n = np.linalg.norm(ref)
    return np.linalg.norm(out - ref) / (n if n else 1.0)


def poisoned(shape, dtype):
    return np.full(shape, np.nan, dtype=dtype)


def test_import_and_signature():
    k = tilefuse.compile(GATHER, device="cpu")
    assert k.symbols == ("T", "M")
    assert [p.name for p in k.parameters] == ["x", "y", "index"]
    assert k.parameters[0].shape == ("T", 64)
    assert k.parameters[2].range == ("-T", "T")
    assert k.outputs[0].dtype == "f16" and k.outputs[0].shape == ("M", 48)
    assert "gather_mm" in repr(k)


def test_results_equal_tilefuse_run_bit_for_bit():
    """The same inputs through the CLI (--input files, --save-output) and through
    the package: identical bytes, for a fixed program and a symbolic one."""
    rng = np.random.default_rng(fresh_seed())
    fixed = "def f(x: f16[40, 64], y: f16[64, 48], index: i64[33]):\n    return x[index] @ y\n"
    with tempfile.TemporaryDirectory() as d:
        for src, T, M, shape_flags in [(fixed, 40, 33, []), (GATHER, 70, 23, ["--shape", "T=70,M=23"])]:
            prog = os.path.join(d, "p.tfs")
            with open(prog, "w") as f:
                f.write(src)
            x, y, index = gather_inputs(rng, T, M)
            if src is fixed:
                index = rng.integers(0, T, size=M).astype(np.int64)
            for name, a in (("x", x), ("y", y), ("index", index)):
                np.save(os.path.join(d, name + ".npy"), a)
            out_dir = os.path.join(d, "out")
            rc, text = run_cli("run", prog, "--device", "cpu", *shape_flags,
                               "--input", "x=" + os.path.join(d, "x.npy"),
                               "--input", "y=" + os.path.join(d, "y.npy"),
                               "--input", "index=" + os.path.join(d, "index.npy"),
                               "--save-output", out_dir)
            assert rc == 0, text
            cli_out = np.load(os.path.join(out_dir, "out0.npy"))
            k = tilefuse.compile(prog, device="cpu")
            out = k(x, y, index, out=poisoned((M, 48), np.float16))
            assert out.dtype == np.float16 and out.shape == (M, 48)
            assert out.tobytes() == cli_out.tobytes()
            assert rel_err(out, gather_reference(x, y, index)) < 1e-2


def test_symbolic_dims_many_sizes_one_compile():
    rng = np.random.default_rng(fresh_seed())
    k = tilefuse.compile(GATHER, device="cpu")
    # Sizes whose specialization and heuristic configs agree: T, M not multiples
    # of 16 and M in buckets whose BLOCK_M is 16.
    for T, M in [(37, 5), (100, 7), (301, 3), (99, 9), (45, 13)]:
        x, y, index = gather_inputs(rng, T, M)
        out = k(x, y, index, out=poisoned((M, 48), np.float16))
        assert rel_err(out, gather_reference(x, y, index)) < 1e-2, (T, M)
    assert k.compile_count == 1
    # Other sizes compile other specializations, each once.
    for T, M in [(64, 128), (64, 128), (50, 0), (1, 1), (2048, 300)]:
        x, y, index = gather_inputs(rng, T, M)
        out = k(x, y, index)
        assert out.shape == (M, 48)
        if M:
            assert rel_err(out, gather_reference(x, y, index)) < 1e-2, (T, M)
    assert 1 < k.compile_count <= 5


def test_eight_symbolic_dims_bom_and_int64_min():
    # Eight symbolic dims on one tensor (the generic sizes multiply past int64).
    rng = np.random.default_rng(fresh_seed())
    k = tilefuse.compile("def eight(x: f32[A, B, C, D, E, F, G, H], w: f32[H, 4]):\n"
                         "    return x @ w\n", device="cpu")
    assert k.symbols == ("A", "B", "C", "D", "E", "F", "G", "H")
    x = rand(rng, (2, 1, 3, 2, 1, 2, 2, 3), np.float32)
    w = rand(rng, (3, 4), np.float32)
    out = k(x, w)
    assert out.shape == (2, 1, 3, 2, 1, 2, 2, 4)
    ref = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
    assert rel_err(out, ref) < 1e-5
    # A leading UTF-8 byte order mark is skipped; INT64_MIN is a literal.
    k = tilefuse.compile("\ufeffdef m(x: i64[T]):\n    return x * 0 + -9223372036854775808\n",
                         device="cpu")
    out = k(np.arange(3, dtype=np.int64))
    assert out.dtype == np.int64 and list(out) == [-2**63] * 3
    with raises(tilefuse.CompileError, match=r"p\.tfs:1:18: error: unexpected character '\$'"):
        tilefuse.compile("\ufeffdef f(x: f32[4]) $:\n    return x\n", name="p.tfs")


def test_several_outputs_and_out():
    rng = np.random.default_rng(fresh_seed())
    k = tilefuse.compile(TWO_OUTPUTS, device="cpu")
    x, w, b = rand(rng, (9, 20), np.float32), rand(rng, (20, 7), np.float32), rand(rng, (7,), np.float32)
    relu, h16 = k(x, w, b)
    h = x.astype(np.float64) @ w.astype(np.float64) + b
    assert relu.shape == (9, 7) and h16.dtype == np.float16
    assert rel_err(relu, np.maximum(h, 0)) < 1e-5
    assert rel_err(h16, h.astype(np.float16)) < 1e-2
    outs = (poisoned((9, 7), np.float32), poisoned((9, 7), np.float16))
    got = k(x, w, b, out=outs)
    assert got is outs
    assert outs[0].tobytes() == relu.tobytes() and outs[1].tobytes() == h16.tobytes()
    with raises(ValueError, match="output `out1` must have shape \\[9, 7\\], got \\[9, 8\\]"):
        k(x, w, b, out=(poisoned((9, 7), np.float32), poisoned((9, 8), np.float16)))
    with raises(ValueError, match="must be contiguous"):
        k(x, w, b, out=(poisoned((7, 9), np.float32).T, poisoned((9, 7), np.float16)))
    with raises(ValueError, match="has 2 outputs, out= gives 1"):
        k(x, w, b, out=poisoned((9, 7), np.float32))


def test_an_index_out_of_range_into_an_empty_gemm_raises():
    # K = 0 (x has no columns: no A tile is loaded) and N = 0 (no block runs):
    # the kernels read no index, and the call returned zeros (an empty result)
    # where PyTorch raises. With symbolic dims, K = 0 at the call's sizes too.
    x = np.zeros((5, 0), np.float32)
    w = np.zeros((0, 3), np.float32)
    bad = np.array([0, 7], np.int64)
    for src, args in (
            ("def k0(x: f32[5, 0], w: f32[0, 3], i: i64[2]):\n    return x[i] @ w\n", (x, w)),
            ("def k0(x: f32[T, K], w: f32[K, 3], i: i64[M]):\n    return x[i] @ w\n", (x, w)),
            ("def n0(x: f32[5, 4], w: f32[4, 0], i: i64[2]):\n    return x[i] @ w\n",
             (np.ones((5, 4), np.float32), np.ones((4, 0), np.float32))),
            # Only row 0 of the gather is used: only i[0] was read.
            ("def s0(x: f32[5, 4], w: f32[4, 3], i: i64[2]):\n    return x[i][0:1] @ w\n",
             (np.ones((5, 4), np.float32), np.ones((4, 3), np.float32)))):
        k = tilefuse.compile(src, device="cpu")
        with raises(tilefuse.IndexOutOfRange, match=r"index 7 is out of bounds for dim 0 of `x` "
                                                    r"\(size 5\): `i`\[1\] = 7") as e:
            k(*args, bad)
        assert (e.value.tensor, e.value.index_tensor, e.value.position, e.value.value) == \
            ("x", "i", (1,), 7)
        assert e.value.location is not None and e.value.location[1:] == (2, 14), str(e.value)
        # In range it runs: zeros, or no elements.
        good = k(*args, np.array([-5, 4], np.int64))
        if "s0" not in src:
            assert good.shape == (2, args[1].shape[1]) and not good.any()
    # A computed index, with symbolic dims (the reference checks it at the call's sizes).
    k = tilefuse.compile("def c(x: f32[T, K], w: f32[K, 3], i: i64[M]):\n"
                         "    return x[i + 0] @ w\n", device="cpu")
    with raises(tilefuse.IndexOutOfRange, match=r"index 7 is out of bounds for dim 0 of `x` "
                                                r"\(size 5\): \(the result of add\)\[1\] = 7"):
        k(x, w, bad)
    assert not k(x, w, np.array([-5, 4], np.int64)).any()


def test_out_with_negative_strides_is_refused_not_left_unwritten():
    # An input with negative strides is copied first; an out= was copied too,
    # so the results went to the copy: the call returned `out` unwritten.
    k = tilefuse.compile("def f(x: f32[4, 3]):\n    return x * 2.0\n", device="cpu")
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    reversed_out = poisoned((4, 3), np.float32)[::-1]
    with raises(ValueError, match=r"output `out0` must be contiguous \(row-major\), got "
                                  r"strides \[-12, 4\] bytes"):
        k(x, out=reversed_out)
    odd = np.ndarray((4, 3), np.float32, buffer=np.zeros(4 * 3 * 8, np.uint8), strides=(22, 4))
    with raises(ValueError, match=r"output `out0` must be contiguous \(row-major\), got "
                                  r"strides \[22, 4\] bytes"):
        k(x, out=odd)
    # An input with negative strides is still taken (a copy).
    assert np.array_equal(k(x[::-1]), x[::-1] * 2)
    with raises(ValueError, match=r"explain: target 'cpu\\x00sm_90a' contains a NUL character"):
        k.explain(target="cpu\0sm_90a")
    with raises(TypeError, match="explain: target must be a string, got int"):
        k.explain(target=90)
    # An unknown target lists the valid ones, as the CLI does.
    with raises(ValueError, match=r"unknown target `sm_75`; valid targets: cpu, sm_80, .*sm_90a"):
        k.explain(target="sm_75")


def test_strided_inputs_equal_contiguous():
    rng = np.random.default_rng(fresh_seed())
    k = tilefuse.compile(TWO_OUTPUTS, device="cpu")
    x, w, b = rand(rng, (12, 20), np.float32), rand(rng, (20, 7), np.float32), rand(rng, (7,), np.float32)
    want = k(x[::2], w, b)
    wt = np.ascontiguousarray(w.T).T      # column-major w
    big = rand(rng, (12, 40), np.float32)
    big[::2, 5:25] = x[::2]                # x[::2] inside a wider array
    got = k(big[::2, 5:25], wt, b)
    for g, e in zip(got, want):
        assert g.tobytes() == e.tobytes()
    # A reversed view (negative strides) is copied first.
    rev = x[::2][::-1]
    assert rev.strides[0] < 0
    got = k(rev, w, b)
    assert got[0].tobytes() == k(np.ascontiguousarray(rev), w, b)[0].tobytes()


def test_dtypes_and_empty():
    rng = np.random.default_rng(fresh_seed())
    k = tilefuse.compile(
        "def f(a: i32[N], m: bool[N], s: u8[N]):\n"
        "    return torch.where(m, a * 2, s.to(torch.int32)), (a > 0)\n", device="cpu")
    a = rng.integers(-50, 50, size=10).astype(np.int32)
    m = rng.integers(0, 2, size=10).astype(bool)
    s = rng.integers(0, 255, size=10).astype(np.uint8)
    r, pos = k(a, m, s)
    assert np.array_equal(r, np.where(m, a * 2, s.astype(np.int32)))
    assert pos.dtype == bool and np.array_equal(pos, a > 0)
    r, pos = k(a[:0], m[:0], s[:0])
    assert r.shape == (0,) and pos.shape == (0,)


def test_errors():
    with raises(tilefuse.CompileError, match=r"bad\.tfs:2:16: error: ") as e:
        tilefuse.compile("def f(x: f32[4]):\n    return x @ y\n", name="bad.tfs")
    assert "^" in str(e.value)
    with raises(FileNotFoundError):
        tilefuse.compile("/nonexistent/program.tfs")
    # A FIFO that nothing writes to is refused at once, not waited on.
    with tempfile.TemporaryDirectory() as d:
        fifo = os.path.join(d, "p.tfs")
        os.mkfifo(fifo)
        with raises(ValueError, match=r"cannot read '.*p\.tfs': not a regular file \(a FIFO\) "
                                      r"and nothing is writing to it"):
            tilefuse.compile(fifo)
    # A lone surrogate (which UTF-8 cannot encode) in the program text is a
    # CompileError at its line:col, not a UnicodeEncodeError; in an option, a
    # ValueError naming it.
    with raises(tilefuse.CompileError, match=r"s\.tfs:2:17: error: the program text holds the "
                                             r"lone surrogate U\+D800") as e:
        tilefuse.compile("def f(x: f32[2]):\n    return x  # \ud800\n", name="s.tfs",
                         device="cpu")
    assert "^" in str(e.value)
    with raises(tilefuse.CompileError, match=r"<source>:1:7: error: .*U\+DFFF"):
        tilefuse.compile("def f(\udfff: f32[2]):\n    return x\n", device="cpu")
    # (lines as the C lexer counts them: a lone \r and \r\n break a line, a
    # leading BOM is not a column)
    with raises(tilefuse.CompileError, match=r"<source>:3:2: error: .*U\+D800.*\n  x\ufffd\n   \^"):
        tilefuse.compile("def f(x: f32[2]):\r    return x\r\nx\ud800\n", device="cpu")
    with raises(tilefuse.CompileError, match=r"<source>:1:7: error: .*U\+D801.*\n  def f\(\ufffd: f32\[2\]\):\n        \^"):
        tilefuse.compile("\ufeffdef f(\ud801: f32[2]):\n    return x\n", device="cpu")
    with raises(ValueError, match=r"tilefuse\.compile: name .* cannot be encoded"):
        tilefuse.compile("def f(x: f32[2]):\n    return x\n", name="a\ud800.tfs")
    with raises(ValueError, match=r"tilefuse\.compile: device .* cannot be encoded"):
        tilefuse.compile("def f(x: f32[2]):\n    return x\n", device="cpu\ud800")
    with raises(ValueError, match='device must be'):
        tilefuse.compile(GATHER, device="gpu")
    with raises(ValueError, match='check must be'):
        tilefuse.compile(GATHER, check="later")
    k = tilefuse.compile(GATHER, device="cpu")
    rng = np.random.default_rng(fresh_seed())
    x, y, index = gather_inputs(rng, 10, 4)
    with raises(TypeError, match="input `y` must be f16, got f32"):
        k(x, y.astype(np.float32), index)
    with raises(TypeError, match="input `x` must be a tensor"):
        k([1, 2], y, index)
    with raises(TypeError, match="takes 3 tensor arguments"):
        k(x, y)
    with raises(ValueError, match=r"input `y` \(f16\[64, 48\]\): dim 1 must be 48, got 47"):
        k(x, y[:, :47], index)
    with raises(ValueError, match=r"input `index` must have 1 dim \(i64\[M\]\), got 2"):
        k(x, y, index.reshape(2, 2))
    k2 = tilefuse.compile("def f(a: f32[T, 4], b: f32[T, 4]):\n    return a + b\n", device="cpu")
    with raises(ValueError, match=r"symbolic dim `T` is 3 in `a` \(dim 0\) but 5 in `b` \(dim 0\)"):
        k2(rand(rng, (3, 4), np.float32), rand(rng, (5, 4), np.float32))
    # An index out of range names the tensor, position and value; the kernel
    # stays usable, and an in-range negative index wraps.
    bad = index.copy()
    bad[2] = 10
    with raises(tilefuse.IndexOutOfRange, match=r"index 10 is out of bounds for dim 0 of `x` "
                                                r"\(size 10\): `index`\[2\] = 10") as e:
        k(x, y, bad)
    assert isinstance(e.value, IndexError)
    assert (e.value.tensor, e.value.index_tensor, e.value.position, e.value.value) == \
        ("x", "index", (2,), 10)
    # It starts at the gather's place in the program (GATHER's line 2, the index).
    assert e.value.location is not None and e.value.location[1:] == (2, 14), str(e.value)
    assert str(e.value).startswith(f"{e.value.location[0]}:2:14: index 10"), str(e.value)
    bad[2] = -10
    out = k(x, y, bad)
    assert rel_err(out, gather_reference(x, y, bad)) < 1e-2
    tilefuse.synchronize()  # nothing pending on the CPU
    # index_select does not wrap a negative index (PyTorch raises): an IndexOutOfRange with
    # the same attributes, where x[index] above wrapped it.
    ks = tilefuse.compile("def f(x: f32[10, 4], i: i64[4]):\n"
                          "    return torch.index_select(x, 0, i)\n", device="cpu", name="sel.tfs")
    xs = rand(rng, (10, 4), np.float32)
    with raises(tilefuse.IndexOutOfRange, match=r"does not wrap") as e:
        ks(xs, np.array([0, 9, -1, 3], np.int64))
    assert (e.value.tensor, e.value.index_tensor, e.value.position, e.value.value) == \
        ("x", "i", (2,), -1)
    assert e.value.location == ("sel.tfs", 2, 12), str(e.value)  # the call
    assert np.array_equal(ks(xs, np.array([0, 9, 1, 3], np.int64)), xs[[0, 9, 1, 3]])
    # Outputs may not share memory with inputs (kernels read inputs as constant).
    k3 = tilefuse.compile("def f(a: f32[8]):\n    return a * 2.0\n", device="cpu")
    a = rand(rng, (8,), np.float32)
    with raises(ValueError, match="output `out0` overlaps input `a`"):
        k3(a, out=a)
    assert np.array_equal(k3(a, out=np.empty(8, np.float32)), a * 2)


def _dlpack_producer(arr, ndim, shape=True):
    """A DLPack producer over `arr` (f32, on the CPU) whose DLTensor claims
    `ndim` dims, with or without a shape array, and has no .ndim attribute."""
    import ctypes

    class Device(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]

    class DType(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]

    class DLTensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device", Device), ("ndim", ctypes.c_int),
                    ("dtype", DType), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                    ("byte_offset", ctypes.c_uint64)]

    class Managed(ctypes.Structure):
        _fields_ = [("t", DLTensor), ("ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]

    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

    class Producer:
        def __init__(self):
            self.arr, self.m = arr, Managed()
            self.shape = (ctypes.c_int64 * 8)(*arr.shape)
            self.m.t.data, self.m.t.device.type, self.m.t.ndim = arr.ctypes.data, 1, ndim
            self.m.t.dtype.code, self.m.t.dtype.bits, self.m.t.dtype.lanes = 2, 32, 1
            self.m.t.shape = ctypes.addressof(self.shape) if shape else None

        def __dlpack__(self, stream=None):
            return new_capsule(ctypes.addressof(self.m), b"dltensor", None)

        def __dlpack_device__(self):
            return (1, 0)

    return Producer()


def test_hostile_arguments_get_errors_and_the_kernel_stays_usable():
    rng = np.random.default_rng(fresh_seed())
    src = "def f(x: f32[N, 4]):\n    return x * 2.0, x + 1.0\n"
    # Options of the wrong type, and text with a NUL (the C API would stop at it).
    with raises(TypeError, match="device must be a string, got int"):
        tilefuse.compile(src, device=5)
    with raises(TypeError, match="threads must be an int"):
        tilefuse.compile(src, threads="4")
    # A thread each: an absurd count is refused at compile, before any call.
    with raises(ValueError, match="threads must be 0 \\(all\\) to 1024, got 1073741824"):
        tilefuse.compile(src, threads=2**30)
    with raises(ValueError, match="contains a NUL character at offset"):
        tilefuse.compile(src.replace("* 2.0", "\0* 2.0"))
    # Text has a program file's limit, 16 MiB (a longer one was parsed whatever its size).
    with raises(ValueError, match=r"^<source>: the program text is longer than 16 MiB, the most a "
                                  r"program may be$"):
        tilefuse.compile(src + "#" * (16 << 20), device="cpu")
    k = tilefuse.compile(src, device="cpu")
    # A copy would free the handle twice.
    import copy
    with raises(TypeError, match="cannot be copied"):
        copy.copy(k)
    with raises(TypeError, match="cannot be copied"):
        copy.deepcopy(k)
    x = rand(rng, (3, 4), np.float32)
    # A read-only out=, and two outputs in one buffer.
    read_only = np.empty((3, 4), np.float32)
    read_only.flags.writeable = False
    with raises(ValueError, match="out= is a read-only array"):
        k(x, out=(read_only, np.empty((3, 4), np.float32)))
    shared = np.empty((3, 4), np.float32)
    with raises(ValueError, match="overlaps output"):
        k(x, out=(shared, shared))
    # out= that is not a tensor is a TypeError, and a DLPack producer is taken,
    # with numpy inputs too (an AttributeError on .flags before).
    for bad in ((None, np.empty((3, 4), np.float32)), (3, np.empty((3, 4), np.float32))):
        with raises(TypeError):
            k(x, out=bad)
    o1, o2 = np.zeros((3, 4), np.float32), np.zeros((3, 4), np.float32)
    k(x, out=(_dlpack_producer(o1, 2), _dlpack_producer(o2, 2)))
    assert np.array_equal(o1, x * 2) and np.array_equal(o2, x + 1)
    # A malformed DLPack producer: negative dims, dims with no shape, and more
    # dims than the parameter has (with no .ndim to size the retry by).
    with raises(ValueError, match="its DLPack tensor has -1 dims"):
        k(_dlpack_producer(x, -1))
    with raises(ValueError, match="its DLPack tensor has 2 dims and no shape"):
        k(_dlpack_producer(x, 2, shape=False))
    x5 = x.reshape(1, 1, 1, 3, 4)
    with raises(ValueError, match=r"input `x` must have 2 dims \(f32\[N, 4\]\), got 5"):
        k(_dlpack_producer(x5, 5))
    a, b = k(_dlpack_producer(x, 2))
    assert np.array_equal(a, x * 2) and np.array_equal(b, x + 1)


def test_jit_runs_the_program_and_reports_errors_in_this_file():
    @tilefuse.jit(device="cpu")
    def scaled(x: "f32[T, 8]", w: "f32[8, 3]"):
        return torch.sigmoid(x @ w) * 2.0  # noqa: F821 (torch: the .tfs namespace)

    rng = np.random.default_rng(fresh_seed())
    x, w = rand(rng, (5, 8), np.float32), rand(rng, (8, 3), np.float32)
    out = scaled(x, w)
    ref = 2.0 / (1.0 + np.exp(-(x.astype(np.float64) @ w)))
    assert rel_err(out, ref) < 1e-5
    assert scaled.kernel.parameters[0].shape == ("T", 8)

    @tilefuse.jit
    def broken(x: "f32[4]"):
        return x @ nothing  # noqa: F821

    with raises(tilefuse.CompileError, match=r"test_numpy\.py:\d+:\d+: error: ") as e:
        broken.kernel
    line = int(str(e.value).split("test_numpy.py:")[1].split(":")[0])
    with open(__file__) as f:
        assert "return x @ nothing" in f.read().splitlines()[line - 1]

    # A lambda has no `def` to compile: a CompileError that says so.
    with raises(tilefuse.CompileError, match="defined with `def`, not a lambda"):
        tilefuse.jit(lambda x: x)(np.ones(2, np.float32))
    # Something that is not a Python function is refused when decorated, not
    # at the first call with inspect's message.
    for not_a_function in (len, int, 5, np.add):
        with raises(TypeError, match="@tilefuse.jit needs a function defined with `def`, got"):
            tilefuse.jit(not_a_function)
    with raises(TypeError, match="got int 5"):
        tilefuse.jit(device="cpu")(5)


def _file_column(token, marker):
    """(line, column) of `token` on the line of this file holding `marker`: columns count code
    points from 1, as diagnostics do."""
    with open(__file__, encoding="utf-8") as f:
        for number, text in enumerate(f.read().splitlines(), 1):
            if marker in text:
                return number, text.index(token, text.index(marker)) + 1
    raise AssertionError(f"no line holds {marker!r}")


class _Indented:
    """A jit method: its source is indented in this file."""

    @tilefuse.jit(device="cpu")
    def unknown(x: "f32[4, 3]", w: "f32[3, 2]"):
        return x @ w_missing  # noqa: F821 (the unknown name under test)

    @tilefuse.jit(device="cpu")
    def gather(x: "f32[T, 3]", w: "f32[3, 2]", idx: "i64[M]"):
        return torch.relu(x[idx] @ w)  # noqa: F821 (torch: the .tfs namespace)

    @tilefuse.jit(device="cpu")
    def bad_return(x: "f32[T, 3]") -> "f16[T, 3]":
        return x * 2.0


def test_jit_locations_in_an_indented_function_are_columns_of_this_file():
    """A jit method or nested function is indented in its file: every location the library
    reports (a compile error's file:line:col and caret, a column inside a message, a run-time
    index error's place) is the token's line and column in the file, and the echoed source line
    is the file's line. (The source was dedented: columns were short by the indentation.)"""
    def nested():
        @tilefuse.jit(device="cpu")
        def inner(x: "f32[4]"):
            return x + deeper_missing  # noqa: F821 (the unknown name under test)
        return inner

    for fn, token, marker in ((_Indented.unknown, "w_missing", "return x @ w_missing"),
                              (nested(), "deeper_missing", "return x + deeper_missing")):
        line, col = _file_column(token, marker)
        with raises(tilefuse.CompileError) as e:
            fn.kernel
        first, shown, caret = str(e.value).splitlines()[:3]
        assert first.startswith(f"{__file__}:{line}:{col}: error: unknown name '{token}'"), first
        with open(__file__, encoding="utf-8") as f:
            assert shown == "  " + f.read().splitlines()[line - 1], (shown, str(e.value))
        assert caret.index("^") == len("  ") + col - 1, str(e.value)

    # Indented by tabs: the echoed line and the caret line keep them (the caret lines up under
    # any tab width).
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tabbed.py")
        with open(path, "w") as f:
            f.write("import tilefuse\nclass C:\n\t@tilefuse.jit(device='cpu')\n"
                    "\tdef m(x: 'f32[4]'):\n\t\treturn x + tabbed_missing\n")
        scope = {}
        exec(compile(open(path).read(), path, "exec"), scope)
        with raises(tilefuse.CompileError) as e:
            scope["C"].m.kernel
        first, shown, caret = str(e.value).splitlines()[:3]
        assert first.startswith(f"{path}:5:14: error: unknown name 'tabbed_missing'"), first
        assert shown == "  \t\treturn x + tabbed_missing", repr(shown)
        assert caret == "  \t\t           ^" + "~" * 13, repr(caret)

    # A column inside the message (the return annotation's) is the file's too.
    line, col = _file_column('"f16[T, 3]"', 'def bad_return(')
    with raises(tilefuse.CompileError, match=rf"the return annotation \(line {line}, column "
                                             rf"{col + 1}\) says f16\[T, 3\]"):
        _Indented.bad_return.kernel

    # A run-time index error: its location is the subscript's place in this file.
    rng = np.random.default_rng(fresh_seed())
    x, w = rand(rng, (5, 3), np.float32), rand(rng, (3, 2), np.float32)
    ok = _Indented.gather(x, w, np.array([4, -5, 0], np.int64))
    ref = np.maximum(x.astype(np.float64)[[4, 0, 0]] @ w.astype(np.float64), 0)
    assert rel_err(ok, ref) < 1e-5
    line, col = _file_column("idx", "return torch.relu(x[idx]")
    with raises(tilefuse.IndexOutOfRange) as e:
        _Indented.gather(x, w, np.array([1, 5], np.int64))
    assert e.value.location == (__file__, line, col), str(e.value)
    assert (e.value.tensor, e.value.index_tensor, e.value.position, e.value.value) == \
        ("x", "idx", (1,), 5)


def test_jit_checks_a_string_return_annotation():
    """`-> "f32[T, 3]"` is unquoted like the parameters' annotations and checked
    by the parser: a matching one compiles, a wrong one is a CompileError at the
    returned value in this file naming both types."""
    @tilefuse.jit(device="cpu")
    def good(x: "f32[T, 8]", w: "f32[8, 3]") -> "f32[T, 3]":
        return x @ w

    x, w = np.ones((5, 8), np.float32), np.ones((8, 3), np.float32)
    assert np.array_equal(good(x, w), np.full((5, 3), 8.0, np.float32))

    @tilefuse.jit(device="cpu")
    def bad(x: "f32[T, 8]", w: "f32[8, 3]") -> "f16[T, 3]":
        return x @ w

    with raises(tilefuse.CompileError,
                match=r"test_numpy\.py:\d+:\d+: error: the returned value is f32\[T, 3\] but the "
                      r"return annotation \(line \d+, column \d+\) says f16\[T, 3\]") as e:
        bad.kernel
    line = int(str(e.value).split("test_numpy.py:")[1].split(":")[0])
    with open(__file__) as f:
        assert "return x @ w" in f.read().splitlines()[line - 1]


def test_jit_unquotes_annotations_after_non_ascii_text():
    """ast's column offsets count UTF-8 bytes: an annotation after a non-ASCII parameter name
    is still unquoted (each quote a space), and the .tfs parser then reports the name at its
    line and column in this file."""
    from tilefuse._jit import _source_of

    def f(xé: "f32[4]", w: "f32[4]"):
        return xé + w

    text = _source_of(f)
    assert 'def f(xé:  f32[4] , w:  f32[4] ):' in text, text
    line, col = _file_column("é", "def f(xé")
    with raises(tilefuse.CompileError,
                match=rf"test_numpy\.py:{line}:{col}: error: non-ASCII character outside a "
                      r"comment"):
        tilefuse.jit(device="cpu")(f).kernel


def test_jit_unquotes_triple_quoted_and_prefixed_annotations():
    """Any spelling of a string literal is an annotation Python takes: a triple-quoted one, a
    raw or u-prefixed one. Only `"..."` and `'...'` were unquoted: `'''f32[8, 3]'''` reached the
    parser as `''f32[8, 3]''` ("expected a dtype such as f16, found a string") and `r"f32[8, 3]"`
    as `r"f32[8, 3]"` ("unknown dtype 'r'"). The quotes and the prefix become spaces, so the
    columns stay the file's."""
    from tilefuse._jit import _source_of

    def f(x: """f32[T, 8]""", w: r'f32[8, 3]', b: u"f32[3]", c: R'''f32[3]''') -> '''f32[T, 3]''':
        return x @ w + b + c

    text = _source_of(f)
    assert "def f(x:    f32[T, 8]   , w:   f32[8, 3] , b:   f32[3] , c:     f32[3]   ) ->    " \
           "f32[T, 3]   :" in text, text
    x, w = np.ones((5, 8), np.float32), np.ones((8, 3), np.float32)
    b, c = np.full(3, 0.5, np.float32), np.full(3, 0.25, np.float32)
    assert np.array_equal(tilefuse.jit(device="cpu")(f)(x, w, b, c),
                          np.full((5, 3), 8.75, np.float32))


def test_jit_eager_matches_torch():
    try:
        import torch
    except ImportError:
        from _support import skip
        skip("torch is not installed")

    @tilefuse.jit(device="cpu")
    def f(x: "f32[T, 8]", w: "f32[8, 3]", idx: "i64[M]"):
        return torch.relu(x[idx] @ w)

    x, w = torch.randn(6, 8), torch.randn(8, 3)
    idx = torch.tensor([5, 0, -1])
    assert torch.allclose(f(x, w, idx), f.eager(x, w, idx), rtol=1e-5, atol=1e-6)


MINMAX = (
    "def minmax(a: f32[N], b: f32[N]):\n"
    "    return torch.maximum(a, b), torch.minimum(a, b)\n")


def test_maximum_minimum_order_signed_zeros_and_propagate_nan():
    """-0 < +0 whatever the operand order (as torch.maximum on CUDA), and a NaN
    operand gives the positive quiet NaN, on the CPU executor."""
    k = tilefuse.compile(MINMAX, device="cpu")
    nan = np.float32("nan")
    a = np.array([-0.0, 0.0, -0.0, 0.0, -nan, 1.0, 2.0], dtype=np.float32)
    b = np.array([0.0, -0.0, -0.0, 0.0, 1.0, -nan, -3.0], dtype=np.float32)
    hi, lo = k(a, b)
    assert list(hi.view(np.uint32)) == [0, 0, 0x80000000, 0, 0x7FC00000, 0x7FC00000,
                                        np.float32(2.0).view(np.uint32)]
    assert list(lo.view(np.uint32)) == [0x80000000, 0x80000000, 0x80000000, 0, 0x7FC00000,
                                        0x7FC00000, np.float32(-3.0).view(np.uint32)]


def test_explain_and_tune_on_the_cpu():
    k = tilefuse.compile(GATHER, device="cpu")
    a = k.explain()
    assert a["program"] == "gather_mm" and a["symbols"] == ["T", "M"]
    assert a["kernels"][0]["kind"] == "gemm"
    rng = np.random.default_rng(fresh_seed())
    spec = k.explain(*gather_inputs(rng, 64, 128))["specialization"]
    assert spec.startswith("T%16 M%16 i32"), spec
    from _support import raises as r
    # Tuning needs a CUDA device: a kernel compiled for the CPU raises, and
    # tunes nothing.
    with r(tilefuse.Unsupported, match='tuning needs a CUDA device.*device="cpu"'):
        k.tune(T=64, M=[1, 16, 1000])
    assert issubclass(tilefuse.Unsupported, tilefuse.Error)
    with r(TypeError, match="tune needs sizes for M"):
        k.tune(T=64)
    # Sizes are ints: an empty list, a float, a string, None or a bool is an
    # error naming the symbol (4.7 was truncated to 4, "4" accepted).
    with r(ValueError, match="tune: T is given no size"):
        k.tune(T=[], M=1)
    for bad in (4.7, "4", None, True):
        with r(TypeError, match="tune: T must be an int or a list of ints"):
            k.tune(T=bad, M=1)
    with r(TypeError, match="tune: M must be an int or a list of ints, got float 2.5"):
        k.tune(T=64, M=[1, 2.5])
    # Past 10,000 combinations: refused before any is made (range(20000) for
    # both symbols built 4e8 strings).
    with r(ValueError, match=r"tune: 400000000 shapes to tune \(the sizes of each symbol "
                             r"multiplied: T 20000 x M 20000\); one call tunes at most 10000"):
        k.tune(T=range(20000), M=range(20000))
    with r(ValueError, match=r"tune: 1000000000000 shapes"):
        k.tune(T=range(10**12), M=1)


def test_torch_cpu_tensors():
    """torch CPU tensors (skips without torch): outputs are torch tensors, bf16
    (which numpy cannot hold) works, a transposed input is read in place."""
    try:
        import torch
    except ImportError:
        from _support import skip
        skip("torch is not installed")
    k = tilefuse.compile(
        "def f(x: bf16[T, 16], w: bf16[16, N], idx: i64[M] in [-T, T)):\n"
        "    return x[idx] @ w\n", device="cpu")
    torch.manual_seed(fresh_seed())
    x = (torch.rand(30, 16) * 2 - 1).bfloat16()
    w = (torch.rand(8, 16) * 2 - 1).bfloat16().t()   # [16, 8], column-major
    idx = torch.randint(-30, 30, (11,))
    out = k(x, w, idx)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.bfloat16 and out.shape == (11, 8)
    ref = (x.double()[idx] @ w.double()).bfloat16()
    assert (out.double() - ref.double()).norm() <= 1e-2 * ref.double().norm()
    again = torch.full((11, 8), float("nan"), dtype=torch.bfloat16)
    k(x, w.contiguous(), idx, out=again)
    assert torch.equal(again, out)
    with raises(TypeError, match="input `x` must be bf16, got f32"):
        k(x.float(), w, idx)


def test_torch_repeated_calls_repack_what_changed():
    """The per-call fast path on torch tensors rewrites only the data pointers
    of a slot whose layout is the last call's: every change between calls (a
    new size, a strided view, a transpose in place on the same tensor object,
    a wrong dtype, numpy arrays in between, an index error) is seen, and every
    result equals the f64 reference."""
    try:
        import torch
    except ImportError:
        from _support import skip
        skip("torch is not installed")
    k = tilefuse.compile(
        "def f(x: f32[T, 16], w: f32[16, N], idx: i64[M] in [-T, T)):\n"
        "    return x[idx] @ w\n", device="cpu")
    torch.manual_seed(fresh_seed())

    def check(x, w, idx):
        out = k(x, w, idx)
        ref = x.double()[idx] @ w.double()
        assert out.shape == ref.shape and out.dtype == torch.float32
        assert (out.double() - ref).norm() <= 1e-5 * max(ref.norm(), 1.0), (x.shape, w.stride())
        return out

    x = torch.rand(40, 16) * 2 - 1
    w = torch.rand(16, 8) * 2 - 1
    idx = torch.randint(-40, 40, (9,))
    first = check(x, w, idx)
    for _ in range(3):                                   # the same layout: pointers only
        assert torch.equal(check(x, w, idx), first)
    check(x, w, torch.randint(-40, 40, (5,)))            # a new M
    check(x + 1, w * 2, idx)                             # new storage, same layout
    wide = torch.rand(40, 48) * 2 - 1
    check(wide[:, ::3], w, idx)                          # strided x, T unchanged
    check(x[:25], w, torch.randint(-25, 25, (9,)))       # a new T
    wt = (torch.rand(8, 16) * 2 - 1)
    wt.t_()                                              # [16, 8] column-major, same object
    check(x, wt, idx)
    wt.t_()                                              # now [8, 16]: a shape error
    with raises(ValueError, match=r"input `w`"):
        k(x, wt, idx)
    wt.t_()
    check(x, wt, idx)
    with raises(TypeError, match="input `w` must be f32, got f64"):
        k(x, w.double(), idx)
    check(x, w, idx)
    out_np = k(x.numpy(), w.numpy(), idx.numpy())        # numpy in between
    assert np.array_equal(out_np, check(x, w, idx).numpy())
    bad = idx.clone()
    bad[4] = 40
    with raises(tilefuse.IndexOutOfRange, match="index 40"):
        k(x, w, bad)
    check(x, w, idx)
