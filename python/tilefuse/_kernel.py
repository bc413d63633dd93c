"""tilefuse.compile and the Kernel it returns: a program called on torch tensors
(CUDA or CPU), numpy arrays or any DLPack producer, through the C API."""

import ctypes
import itertools
import json
import os
import struct
import threading
import weakref

from . import _errors, _lib

# DLTensor as DLPack lays it out (dlpack.h): data, device {type, id}, ndim,
# dtype {code, bits, lanes}, shape*, strides*, byte_offset: 48 bytes.
_HEADER = struct.Struct("<QiiiBBHQQQ")
assert _HEADER.size == 48
# A DLTensor with its shape and strides right after it (n dims each): one
# pack_into per tensor.
_PACKED = [struct.Struct(f"<QiiiBBHQQQ{2 * n}q") for n in range(65)]
_KDLCPU, _KDLCUDA = 1, 2
_MAX_TUNE_SHAPES = 10000  # Kernel.tune's combinations of sizes, as `tilefuse tune --shapes`

# tilefuse dtype name -> DLPack (code, bits); bool is DLPack 0.8's kDLBool,
# the float8 types DLPack 1.1's kDLFloat8_e4m3fn / kDLFloat8_e5m2.
_DL = {"f16": (2, 16), "bf16": (4, 16), "f32": (2, 32), "f64": (2, 64), "i8": (0, 8),
       "u8": (1, 8), "i32": (0, 32), "i64": (0, 64), "bool": (6, 8), "f8e4m3": (10, 8),
       "f8e5m2": (12, 8)}
_NUMPY_NAMES = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "u8": "uint8",
                "i32": "int32", "i64": "int64", "bool": "bool"}
_TORCH_NAMES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
                "i8": "int8", "u8": "uint8", "i32": "int32", "i64": "int64", "bool": "bool",
                "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}

# Filled on first use (the package imports neither torch nor numpy itself).
_torch = None
_Tensor = None      # torch.Tensor
_torch_codes = {}   # torch.dtype -> (code, bits)
_torch_dtypes = {}  # tilefuse name -> torch.dtype
_np = None
_numpy_codes = {}   # numpy dtype -> (code, bits)
_raw_stream = None


def _torch_module():
    global _torch, _raw_stream, _Tensor
    if _torch is None:
        import torch
        for name, tname in _TORCH_NAMES.items():
            dt = getattr(torch, tname, None)
            if dt is not None:
                _torch_codes[dt] = _DL[name]
                _torch_dtypes[name] = dt
        _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _Tensor = torch.Tensor
        _torch = torch
    return _torch


_torch_device_cache = {}


def _torch_device(index):
    """torch.device("cuda", index) (or "cpu" for -1), made once."""
    d = _torch_device_cache.get(index)
    if d is None:
        d = _torch.device("cpu") if index < 0 else _torch.device("cuda", index)
        _torch_device_cache[index] = d
    return d


def _numpy_module():
    global _np
    if _np is None:
        import numpy
        for name, nname in _NUMPY_NAMES.items():
            _numpy_codes[numpy.dtype(nname)] = _DL[name]
        _np = numpy
    return _np


class Parameter:
    """One parameter (or output) of a program: its name, tilefuse dtype name
    ("f16", "i64", ...), shape (ints, and names for symbolic dims) and, for an
    index parameter, the `in [lo, hi)` range it was declared with (or None)."""

    def __init__(self, d):
        self.name = d["name"]
        self.dtype = d["dtype"]
        self.shape = tuple(d["shape"])
        self.range = tuple(d["range"]) if "range" in d else None

    def __repr__(self):
        dims = ", ".join(str(s) for s in self.shape)
        r = f" in [{self.range[0]}, {self.range[1]})" if self.range else ""
        return f"{self.name}: {self.dtype}[{dims}]{r}"


class _Buffers:
    """One thread's argument storage for a kernel: a DLTensor (and its shape
    and strides) per tensor, the pointer arrays tf_run takes, the run options."""

    def __init__(self, n_in, n_out, cap, run_options_size):
        self.cap = cap
        self.want = cap  # the dims _pack needed when a tensor did not fit (it returned None)
        slot = 48 + 16 * cap
        self.slot = slot
        self.buf = ctypes.create_string_buffer(slot * max(1, n_in + n_out))
        base = ctypes.addressof(self.buf)
        self.base = base
        self.inputs = (ctypes.c_void_p * max(1, n_in))(*[base + slot * i for i in range(n_in)])
        self.outputs = (ctypes.c_void_p * max(1, n_out))(
            *[base + slot * (n_in + i) for i in range(n_out)])
        self.run = ctypes.create_string_buffer(max(64, run_options_size))
        _lib.lib().tf_run_options_init(self.run)
        self.run_key = None  # (stream, workspace, bytes, sync) last packed into run
        self.needed = ctypes.c_size_t(0)
        self.needed_ref = ctypes.byref(self.needed)
        # The buffer as 64-bit words: a slot's data pointer is word
        # slot_words * i (DLTensor.data is its first field).
        self.words = (ctypes.c_uint64 * (len(self.buf) // 8)).from_buffer(self.buf)
        self.slot_words = slot // 8
        # The fast path's record of what each slot holds besides its data
        # pointer (Kernel._call_torch): (shape, strides, dtype, device) per
        # input, (shape, device) per output; None: repack it.
        self.keys = [None] * (n_in + n_out)
        self.out_shapes = None

    def forget(self):
        """The general path repacked the slots: the fast path repacks too."""
        self.keys = [None] * len(self.keys)
        self.out_shapes = None


# The run options struct: struct_size, stream, workspace, workspace_bytes, sync.
_RUN = struct.Struct("<I4xQQQi")

# Kernel._call_torch's answer when the general path must run.
_GENERAL = object()

_live = weakref.WeakSet()


class Kernel:
    """A compiled program. Call it on tensors: `k(x, w, idx)` returns the output
    (a tuple for several), allocated with the inputs' library on their device
    (torch's caching allocator on CUDA), or fills `out=`.

    On CUDA the kernels are launched on torch.cuda.current_stream() without any
    device synchronization, so calls may be captured in a CUDA graph (after one
    call at the same sizes, which compiles and loads the kernels). An index out
    of range is found by the kernel, which writes a status word in host memory;
    it is raised as tilefuse.IndexOutOfRange by a later call of this kernel
    (once the failing kernel has finished; that later call does not run) or by
    tilefuse.synchronize(), or by the same call with check="sync" (which waits
    for the stream). The device stays usable. This is how CUDA itself reports
    asynchronous errors, minus the dead context. On the CPU every call is
    synchronous and raises its own errors.

    Thread safety: calls may come from any thread; calls of one kernel are
    serialized inside the library."""

    def __init__(self, handle, check):
        self._handle = ctypes.c_void_p(handle)
        lib = _lib.lib()
        self.signature = json.loads(lib.tf_program_signature(self._handle).decode("utf-8"))
        self.name = self.signature["name"]
        self.symbols = tuple(self.signature["symbols"])
        self.parameters = [Parameter(p) for p in self.signature["parameters"]]
        self.outputs = [Parameter(p) for p in self.signature["outputs"]]
        self._n_in, self._n_out = len(self.parameters), len(self.outputs)
        self._cap = max([len(p.shape) for p in self.parameters + self.outputs] + [1])
        self._tls = threading.local()
        self._check = _check_mode(check)
        # Where each symbol is first bound: (parameter position, dim).
        self._binds = {}
        for i, p in enumerate(self.parameters):
            for d, s in enumerate(p.shape):
                if isinstance(s, str) and s not in self._binds:
                    self._binds[s] = (i, d)
        probe = ctypes.create_string_buffer(64)
        lib.tf_run_options_init(probe)
        self._run_size = struct.unpack_from("<I", probe)[0]
        assert self._run_size == 40, self._run_size
        self._out_recipes = [[(d, self._binds[d] if isinstance(d, str) else None) for d in o.shape]
                             for o in self.outputs]
        # Per slot (inputs, then outputs), how errors name it.
        self._what = ([f"input `{p.name}`" for p in self.parameters] +
                      [f"output `{o.name}`" for o in self.outputs])
        # The fast path's output allocation: for each output, an input of the
        # same dtype (new_empty on it puts the output on the call's device
        # with the right dtype, cheaper than torch.empty with keywords), or
        # None (torch.empty).
        self._like = [next((i for i, p in enumerate(self.parameters) if p.dtype == o.dtype), None)
                      for o in self.outputs]
        self._tf_run = lib.tf_run_raw
        self._ws_hint = 0
        self._device_option = "auto"
        _live.add(self)

    def __copy__(self):
        # The handle is owned: a copy would free it twice.
        raise TypeError("a tilefuse.Kernel cannot be copied; share the object itself (calls "
                        "from several threads are safe)")

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __reduce__(self):
        raise TypeError("a tilefuse.Kernel cannot be pickled; compile the program again")

    def __del__(self):
        h = getattr(self, "_handle", None)
        if h and _lib._lib is not None:
            _lib._lib.tf_program_free(h)
            self._handle = None

    def __repr__(self):
        params = ", ".join(repr(p) for p in self.parameters)
        return f"<tilefuse.Kernel {self.name}({params})>"

    # -- calling -------------------------------------------------------------

    def _buffers(self, cap):
        b = getattr(self._tls, "b", None)
        if b is None or b.cap < cap:
            b = _Buffers(self._n_in, self._n_out, max(cap, self._cap), self._run_size)
            self._tls.b = b
        return b

    def _pack(self, b, i, x, keep):
        """Writes x's DLTensor into slot i (inputs, then outputs); returns
        (device id or -1 for the CPU, kind), or None when x has more dims than
        the slots hold."""
        what = self._what[i]
        off = b.slot * i
        if _torch is not None and isinstance(x, _torch.Tensor):
            code = _torch_codes.get(x.dtype)
            if code is None:
                raise TypeError(f"{what} is {x.dtype}, which tilefuse does not take")
            dev = x.get_device()
            shape = x.shape
            n = len(shape)
            if n > b.cap:
                b.want = n
                return None
            addr = b.base + off + 48
            _PACKED[n].pack_into(b.buf, off, x.data_ptr(), _KDLCPU if dev < 0 else _KDLCUDA,
                                 dev if dev > 0 else 0, n, code[0], code[1], 1, addr, addr + 8 * n,
                                 0, *shape, *x.stride())
            return dev, "torch"
        if _np is not None and isinstance(x, _np.ndarray):
            code = _numpy_codes.get(x.dtype)
            if code is None:
                raise TypeError(f"{what} is a numpy array of {x.dtype}, which tilefuse does not "
                                "take" + (" (numpy has no bf16 or float8: pass a torch tensor)"
                                          if x.dtype.kind == "V" else ""))
            item = x.itemsize
            strides = x.strides
            if any(st < 0 or st % item for st in strides):
                x = _np.ascontiguousarray(x)
                keep.append(x)
                strides = x.strides
            n = x.ndim
            if n > b.cap:
                b.want = n
                return None
            addr = b.base + off + 48
            _PACKED[n].pack_into(b.buf, off, x.ctypes.data, _KDLCPU, 0, n, code[0], code[1], 1,
                                 addr, addr + 8 * n, 0, *x.shape, *[st // item for st in strides])
            return -1, "numpy"
        # torch or numpy not imported yet: import it, then as above.
        module = type(x).__module__.split(".")[0]
        if module == "torch" and _torch is None:
            _torch_module()
            return self._pack(b, i, x, keep)
        if module == "numpy" and _np is None:
            _numpy_module()
            return self._pack(b, i, x, keep)
        # Anything else that speaks DLPack: its own DLTensor, borrowed.
        if hasattr(x, "__dlpack__"):
            capsule = x.__dlpack__()
            keep.append(capsule)
            get = ctypes.pythonapi.PyCapsule_GetPointer
            get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
            managed = get(capsule, b"dltensor")
            dev_type, dev_id = struct.unpack_from("<ii", ctypes.string_at(managed + 8, 8))
            ctypes.memmove(b.base + off, managed, 48)
            ndim = struct.unpack_from("<i", ctypes.string_at(managed + 16, 4))[0]
            shape_ptr, strides_ptr = struct.unpack_from("<QQ", ctypes.string_at(managed + 24, 16))
            if ndim < 0 or ndim > 64:
                raise ValueError(f"{what}: its DLPack tensor has {ndim} dims")
            if ndim > 0 and not shape_ptr:
                raise ValueError(f"{what}: its DLPack tensor has {ndim} dims and no shape")
            if ndim > b.cap:
                b.want = ndim
                return None
            addr = b.base + off + 48
            ctypes.memmove(addr, shape_ptr, 8 * ndim)
            if strides_ptr:
                ctypes.memmove(addr + 8 * ndim, strides_ptr, 8 * ndim)
                struct.pack_into("<QQ", b.buf, off + 24, addr, addr + 8 * ndim)
            else:
                struct.pack_into("<QQ", b.buf, off + 24, addr, 0)
            return (dev_id if dev_type in (2, 13) else -1), "dlpack"
        raise TypeError(f"{what} must be a tensor (torch, numpy or any DLPack producer), "
                        f"got {type(x).__name__}")

    def _call_torch(self, args):
        """The call on torch tensors (exactly torch.Tensor, no out=, no check=,
        no workspace), packing only what changed since this thread's last
        call: a slot whose shape, strides, dtype and device are those of the
        last call gets its data pointer written, nothing else. Returns the
        result, or _GENERAL when the general path must run (anything else:
        numpy, a subclass, a new dtype, more dims than the slots hold, a
        workspace)."""
        tensor = _Tensor
        if tensor is None:
            return _GENERAL
        n_in = self._n_in
        if len(args) != n_in or not n_in:
            return _GENERAL
        try:
            b = self._tls.b
        except AttributeError:
            return _GENERAL
        keys = b.keys
        words = b.words
        sw = b.slot_words
        same = True
        shapes = []
        for i, x in enumerate(args):
            if type(x) is not tensor:
                return _GENERAL
            shape = x.shape
            key = (shape, x.stride(), x.dtype, x.get_device())
            if key != keys[i]:
                strides, dtype, dev = key[1], key[2], key[3]
                code = _torch_codes.get(dtype)
                n = len(shape)
                if code is None or n > b.cap:
                    return _GENERAL
                addr = b.base + b.slot * i + 48
                _PACKED[n].pack_into(b.buf, b.slot * i, 0, _KDLCPU if dev < 0 else _KDLCUDA,
                                     dev if dev > 0 else 0, n, code[0], code[1], 1, addr,
                                     addr + 8 * n, 0, *shape, *strides)
                keys[i] = key
                same = False
            words[sw * i] = x.data_ptr()
            shapes.append(shape)
        device = keys[0][3]
        out_shapes = b.out_shapes if same else None
        if out_shapes is None:
            try:
                out_shapes = [tuple(d if r is None else shapes[r[0]][r[1]] for d, r in recipe)
                              for recipe in self._out_recipes]
            except IndexError:
                return _GENERAL  # a wrong rank: the general path says which
            b.out_shapes = out_shapes
        outs = []
        for j, like in enumerate(self._like):
            s = out_shapes[j]
            if like is not None:
                o = args[like].new_empty(s)
            else:
                o = _torch.empty(s, dtype=_torch_dtypes[self.outputs[j].dtype],
                                 device=_torch_device(device))
            slot = n_in + j
            key = keys[slot]
            if key is None or key[0] != s or key[1] != device:
                # Contiguous, of the output's dtype (allocated so).
                code = _DL[self.outputs[j].dtype]
                n = len(s)
                if n > b.cap:
                    return _GENERAL
                strides = o.stride()
                addr = b.base + b.slot * slot + 48
                _PACKED[n].pack_into(b.buf, b.slot * slot, 0,
                                     _KDLCPU if device < 0 else _KDLCUDA,
                                     device if device > 0 else 0, n, code[0], code[1], 1, addr,
                                     addr + 8 * n, 0, *s, *strides)
                keys[slot] = (s, device)
            words[sw * slot] = o.data_ptr()
            outs.append(o)
        stream = 0
        if device >= 0:
            stream = (_raw_stream(device) if _raw_stream is not None
                      else _torch.cuda.current_stream(device).cuda_stream)
        sync = 1 if self._check == "sync" else 0
        if b.run_key != (stream, sync):
            _RUN.pack_into(b.run, 0, self._run_size, stream, 0, 0, sync)
            b.run_key = (stream, sync)
        status = self._tf_run(self._handle, b.inputs, n_in, b.outputs, self._n_out, b.run,
                              b.needed_ref)
        if status:
            if status == _lib.ERROR_WORKSPACE:
                return _GENERAL  # nothing ran; the general path allocates one
            _errors.raise_for(status)
        return outs[0] if self._n_out == 1 else tuple(outs)

    def _output_shapes(self, args):
        # Each output dim: a number, or (parameter, dim) where its symbol is bound.
        return [tuple(d if r is None else args[r[0]].shape[r[1]] for d, r in recipe)
                for recipe in self._out_recipes]

    def __call__(self, *args, out=None, check=None):
        """Runs the program on args (one per parameter, in order). Returns the
        output, or a tuple when the program has several; with out= (a tensor, or a
        tuple of them: contiguous, of the outputs' dtypes and shapes) writes there
        and returns it. check: "async" (the kernel's default from compile) or
        "sync" (CUDA: wait for the stream and raise an index error now)."""
        n_in = self._n_in
        if len(args) != n_in:
            raise TypeError(f"{self.name}() takes {n_in} tensor argument"
                            f"{'' if n_in == 1 else 's'} "
                            f"({', '.join(p.name for p in self.parameters)}), got {len(args)}")
        if out is None and check is None and not self._ws_hint:
            r = self._call_torch(args)
            if r is not _GENERAL:
                return r
        b = self._buffers(self._cap)
        b.forget()
        keep = []
        device = None
        kind = None
        for i, x in enumerate(args):
            r = self._pack(b, i, x, keep)
            if r is None:
                self._buffers(b.want)
                return self(*args, out=out, check=check)
            if device is None:
                device, kind = r
        outs = out
        if outs is None:
            outs = self._allocate(args, device, kind)
        elif not isinstance(outs, (tuple, list)):
            outs = (outs,)
        if len(outs) != self._n_out:
            raise ValueError(f"{self.name} has {self._n_out} output"
                             f"{'' if self._n_out == 1 else 's'}, out= gives {len(outs)}")
        for j, o in enumerate(outs):
            # (A numpy out= can be read-only; any other out= is packed, or
            # refused by _pack with a TypeError, whatever the inputs are.)
            if _np is not None and isinstance(o, _np.ndarray):
                if not o.flags.writeable:
                    raise ValueError(f"{self._what[n_in + j]}: out= is a read-only array")
                # _pack copies an input with negative (or odd) strides; a copy of
                # an output would take the results and leave `o` as it was.
                if not o.flags.c_contiguous:
                    raise ValueError(f"{self._what[n_in + j]} must be contiguous (row-major), "
                                     f"got strides {list(o.strides)} bytes")
            r = self._pack(b, n_in + j, o, keep)
            if r is None:
                self._buffers(b.want)
                return self(*args, out=out, check=check)
            if device is None:
                device, kind = r
        mode = self._check if check is None else _check_mode(check)
        stream = 0
        workspace = None
        if device is not None and device >= 0 and kind == "torch":
            stream = (_raw_stream(device) if _raw_stream is not None
                      else _torch.cuda.current_stream(device).cuda_stream)
            if self._ws_hint:
                workspace = _torch.empty(self._ws_hint, dtype=_torch.uint8,
                                         device=_torch_device(device))
        while True:
            ws_ptr = workspace.data_ptr() if workspace is not None else 0
            ws_bytes = workspace.numel() if workspace is not None else 0
            _RUN.pack_into(b.run, 0, self._run_size, stream, ws_ptr, ws_bytes,
                           1 if mode == "sync" else 0)
            b.run_key = None
            status = self._tf_run(self._handle, b.inputs, n_in, b.outputs, self._n_out, b.run,
                                  b.needed_ref)
            if status == _lib.ERROR_WORKSPACE and b.needed.value > ws_bytes and kind == "torch":
                # The plan keeps intermediates on the device: a workspace from
                # torch's caching allocator, on the current stream.
                self._ws_hint = b.needed.value
                workspace = _torch.empty(self._ws_hint, dtype=_torch.uint8,
                                         device=_torch_device(device))
                continue
            break
        if status:
            _errors.raise_for(status)
        del keep
        if out is not None:
            return out
        return outs[0] if self._n_out == 1 else tuple(outs)

    def _allocate(self, args, device, kind):
        try:
            shapes = self._output_shapes(args)
        except Exception:
            # Inputs without a Python shape (a DLPack producer), or wrong ones:
            # the library computes the shapes from the packed inputs, or says
            # what is wrong with them.
            b = self._buffers(self._cap)
            shape = (ctypes.c_int64 * 64)()
            ndim = ctypes.c_int(0)
            shapes = []
            for j in range(self._n_out):
                _errors.raise_for(_lib.lib().tf_output_shape(self._handle, b.inputs, self._n_in, j,
                                                             shape, 64, ctypes.byref(ndim)))
                shapes.append(tuple(shape[d] for d in range(ndim.value)))
        if kind == "torch" or (kind is None and self._device_option == "cuda"):
            torch = _torch_module()
            dev = _torch_device(device if device is not None and device >= 0 else -1)
            return [torch.empty(s, dtype=_torch_dtypes[o.dtype], device=dev)
                    for s, o in zip(shapes, self.outputs)]
        if kind == "dlpack" and device is not None and device >= 0:
            raise ValueError("outputs on a GPU for a DLPack producer other than torch cannot be "
                             "allocated here: pass out=")
        np = _numpy_module()
        outs = []
        for s, o in zip(shapes, self.outputs):
            if o.dtype not in _NUMPY_NAMES:
                raise TypeError(f"output `{o.name}` is {o.dtype}, which numpy cannot hold: call "
                                "with torch tensors or pass out=")
            outs.append(np.empty(s, dtype=_NUMPY_NAMES[o.dtype]))
        return outs

    # -- the rest of the API -----------------------------------------------------

    def synchronize(self):
        """Waits for the GPUs this kernel ran on and raises a failed index check of
        any earlier call."""
        _errors.raise_for(_lib.lib().tf_synchronize(self._handle))

    def explain(self, *example_args, target=None):
        """The explain account (`tilefuse explain --json`) as a dict: the kernels
        for `target` ("cpu", "sm_90a", ...; None: where calls would run),
        specialized for example_args when given, else the generic kernels."""
        if target is not None:
            if not isinstance(target, str):
                raise TypeError(f"explain: target must be a string, got {type(target).__name__}")
            if "\0" in target:
                # The C API takes NUL-terminated text: "cpu\0x" would explain "cpu".
                raise ValueError(f"explain: target {target!r} contains a NUL character")
        lib = _lib.lib()
        keep = []
        ptr = ctypes.c_void_p()
        if example_args:
            if len(example_args) != self._n_in:
                raise TypeError(f"explain takes {self._n_in} example tensors, got "
                                f"{len(example_args)}")
            b = self._buffers(self._cap)
            while True:
                b.forget()
                if all(self._pack(b, i, x, keep) is not None for i, x in enumerate(example_args)):
                    break
                b = self._buffers(b.want)
            status = lib.tf_explain(self._handle, b.inputs, self._n_in,
                                    target.encode() if target else None, ctypes.byref(ptr))
        else:
            status = lib.tf_explain(self._handle, None, 0, target.encode() if target else None,
                                    ctypes.byref(ptr))
        _errors.raise_for(status)
        return json.loads(_lib.take_string(ptr.value))

    def tune(self, retune=False, **sizes):
        """Tunes ahead of time (GPU) at every combination of the given sizes, e.g.
        k.tune(T=4096, M=[1, 16, 128, 1024]), keeping each winner per size bucket
        in the tuning cache, where later calls in that bucket find it (a call
        never tunes; a first call in an untuned bucket uses the heuristic
        config). Returns one line per combination. Tuning needs a CUDA device:
        on a kernel compiled with device="cpu", or where no GPU is usable, it
        raises tilefuse.Unsupported saying why (after checking the sizes)."""
        missing = [s for s in self.symbols if s not in sizes]
        if missing:
            raise TypeError(f"tune needs sizes for {', '.join(missing)}")
        unknown = [s for s in sizes if s not in self.symbols]
        if unknown:
            raise TypeError(f"{', '.join(unknown)}: not a symbolic dim of {self.name}")
        names = list(sizes)
        # (Not copied: a range's length is known without making its items.)
        lists = [v if isinstance(v, (list, tuple, range)) else [v] for v in sizes.values()]
        for n, vs in zip(names, lists):
            if not vs:
                raise ValueError(f"tune: {n} is given no size (an empty list)")
        # Counted before any is made: range(20000) for two symbols made 4e8
        # strings, and list(range(10**12)) never ended.
        count = 1
        for vs in lists:
            count *= len(vs)
        if count > _MAX_TUNE_SHAPES:
            raise ValueError(f"tune: {count} shapes to tune (the sizes of each symbol multiplied: "
                             + " x ".join(f"{n} {len(vs)}" for n, vs in zip(names, lists))
                             + f"); one call tunes at most {_MAX_TUNE_SHAPES}")
        for n, vs in zip(names, lists):
            for v in vs:
                # An int (bool is not a size); 4.7 or "4" is refused, not truncated.
                if isinstance(v, bool) or not isinstance(v, int):
                    raise TypeError(f"tune: {n} must be an int or a list of ints, got "
                                    f"{type(v).__name__} {v!r}")
        combos = [",".join(f"{n}={int(v)}" for n, v in zip(names, c))
                  for c in itertools.product(*lists)] or [""]
        arr = (ctypes.c_char_p * len(combos))(*[c.encode() for c in combos])
        ptr = ctypes.c_void_p()
        _errors.raise_for(_lib.lib().tf_tune(self._handle, arr, len(combos), 1 if retune else 0,
                                             ctypes.byref(ptr)))
        return _lib.take_string(ptr.value).splitlines()

    @property
    def compile_count(self):
        """How many specializations have been compiled so far."""
        return _lib.lib().tf_program_compile_count(self._handle)


def _check_mode(check):
    if check not in ("async", "sync"):
        raise ValueError(f'check must be "async" or "sync", not {check!r}')
    return check


class _Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("device", ctypes.c_char_p),
                ("plan", ctypes.c_char_p), ("allow_tf32", ctypes.c_int),
                ("tuning", ctypes.c_int), ("cache_dir", ctypes.c_char_p),
                ("threads", ctypes.c_int)]


def _looks_like_source(text):
    return "\n" in text or text.lstrip().startswith(("def ", "import ", "from ", "@", "#"))


def _source_bytes(text, name):
    """The program text as UTF-8 for the C API. A lone surrogate (e.g. "\\ud800", which
    UTF-8 cannot encode) is a CompileError at its line:col, as the C API reports a
    malformed program, not a UnicodeEncodeError."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        at = e.start
        # Lines break at \n, \r\n and a lone \r, and a leading BOM is not a
        # column, as in the C lexer's file:line:col.
        row, line_start, i = 1, 0, 0
        while i < at:
            if text[i] in "\r\n":
                i += 2 if text.startswith("\r\n", i) else 1
                row, line_start = row + 1, i
            else:
                i += 1
        if row == 1 and text.startswith("\ufeff"):
            line_start = 1
        line_end = min((j for j in (text.find("\n", at), text.find("\r", at)) if j >= 0),
                       default=len(text))
        line = text[line_start:line_end]
        col = at - line_start + 1
        shown = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in line)
        raise _errors.CompileError(
            f"{name}:{row}:{col}: error: the program text holds the lone surrogate "
            f"U+{ord(text[at]):04X}, which is not a character (UTF-8 cannot encode it); a "
            f"program must be valid Unicode text\n  {shown}\n  {' ' * (col - 1)}^") from None


def _option_bytes(key, value, path=False):
    """A string option as bytes (a path by os.fsencode); one that cannot be encoded is a
    ValueError naming the option, not a UnicodeEncodeError."""
    try:
        return os.fsencode(value) if path else value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"tilefuse.compile: {key} {value!r} cannot be encoded (it holds "
                         f"U+{ord(value[e.start]):04X}, a lone surrogate)") from None


def compile(source_or_path, device="auto", plan="auto", allow_tf32=False, tuning=True,
            cache_dir=None, threads=0, check="async", name=None):
    """Compiles a .tfs program: `source_or_path` is its text (anything with a newline,
    or starting with `def`) or the path of a .tfs file.

    device: "auto" (each call runs where its tensors are), "cpu" or "cuda".
    plan: "auto" (on a GPU the tuned choice for the call's size bucket when one is
    cached, else the fused plan), "fused" or "unfused". allow_tf32: f32 GEMMs on
    TF32 tensor cores. tuning: use tunings from the tuning cache (Kernel.tune,
    `tilefuse tune`); False: heuristic configs only. cache_dir: the kernel and
    tuning caches' root (None: $TILEFUSE_CACHE_DIR, else ~/.cache/tilefuse).
    threads: CPU executor threads (0: all). check: "async" or "sync" (see
    Kernel). name: the file name diagnostics of a source text use.

    Raises tilefuse.CompileError (the file:line:col diagnostic) for a malformed
    program, FileNotFoundError for a missing file, ValueError for a bad option, a
    file that cannot be read (a directory, a FIFO that nothing writes to) or a
    program (text or file) longer than 16 MiB."""
    _check_mode(check)
    for key, value, none_ok in (("device", device, False), ("plan", plan, False),
                                ("cache_dir", cache_dir, True), ("name", name, True)):
        if value is None and none_ok:
            continue
        if not isinstance(value, (str, os.PathLike)) or (key != "cache_dir" and
                                                         not isinstance(value, str)):
            raise TypeError(f"tilefuse.compile: {key} must be a string, got "
                            f"{type(value).__name__}")
        if "\0" in os.fspath(value):
            raise ValueError(f"tilefuse.compile: {key} contains a NUL character")
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError(f"tilefuse.compile: threads must be an int, got {type(threads).__name__}")
    if threads < 0 or threads > 1024:
        raise ValueError(f"tilefuse.compile: threads must be 0 (all) to 1024, got {threads}")
    if cache_dir is not None:
        cache_dir = os.fspath(cache_dir)
    lib = _lib.lib()
    opts = _Options()
    lib.tf_options_init(ctypes.byref(opts))
    assert opts.struct_size == ctypes.sizeof(_Options), "tf_options does not match the library"
    keep = [_option_bytes(k, v, path=k == "cache_dir") if isinstance(v, str) else v
            for k, v in (("device", device), ("plan", plan), ("cache_dir", cache_dir))]
    opts.device, opts.plan = keep[0], keep[1]
    opts.cache_dir = keep[2]
    opts.allow_tf32 = 1 if allow_tf32 else 0
    opts.tuning = 1 if tuning else 0
    opts.threads = int(threads)
    handle = ctypes.c_void_p()
    text = os.fspath(source_or_path)
    if not isinstance(text, str):
        raise TypeError("tilefuse.compile: pass the program's text or a path as a str, got "
                        f"{type(text).__name__}")
    if "\0" in text:
        # The C API takes NUL-terminated text: it would compile what comes before.
        raise ValueError("tilefuse.compile: the program text (or path) contains a NUL character "
                         f"at offset {text.index(chr(0))}")
    if _looks_like_source(text):
        file_name = _option_bytes("name", name) if name else b"<source>"
        status = lib.tf_compile_source(_source_bytes(text, name or "<source>"), file_name,
                                       ctypes.byref(opts), ctypes.byref(handle))
    else:
        if not os.path.exists(text):
            raise FileNotFoundError(f"tilefuse.compile: no such file: {text!r} (pass the "
                                    "program's text, or the path of a .tfs file)")
        status = lib.tf_compile_file(_option_bytes("path", text, path=True), ctypes.byref(opts),
                                     ctypes.byref(handle))
    _errors.raise_for(status)
    k = Kernel(handle.value, check)
    k._device_option = device
    return k


def synchronize():
    """Waits for every GPU a live kernel ran on and raises the first failed index
    check of any earlier call (tilefuse.IndexOutOfRange)."""
    for k in list(_live):
        k.synchronize()
