"""tilefuse from Python: compile .tfs programs and call their fused kernels on
torch tensors (CUDA or CPU), numpy arrays or any DLPack producer.

    import tilefuse
    k = tilefuse.compile('''
    def gather_mm(x: f16[T, 2048], y: f16[2048, 2048], index: i64[M] in [0, T)):
        return x[index] @ y
    ''')
    out = k(x, y, index)          # torch CUDA tensors: launched on the current stream

Pure Python over the C API of libtilefuse.so (ctypes): no compiler at import,
any Python 3 and any torch or numpy. The library is found in the source tree's
build/ directory, or where $TILEFUSE_LIBRARY points.
"""

from ._errors import CompileError, Error, IndexOutOfRange, InternalError, Unsupported
from ._jit import JitFunction, jit
from ._kernel import Kernel, Parameter, compile, synchronize
from . import _lib


def library_path():
    """The path libtilefuse.so was (or will be) loaded from."""
    lib = _lib.lib()
    return getattr(lib, "_name", None)


def version():
    """The library's version string."""
    return _lib.lib().tf_version().decode()


__all__ = ["compile", "jit", "synchronize", "Kernel", "JitFunction", "Parameter", "CompileError",
           "Error", "IndexOutOfRange", "InternalError", "Unsupported", "library_path", "version"]
