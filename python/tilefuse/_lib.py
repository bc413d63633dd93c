"""Loading libtilefuse.so and declaring its C API (include/tilefuse/tilefuse.h) for ctypes."""

import ctypes
import os

# tf_status codes.
OK = 0
ERROR_INVALID_ARGUMENT = 1
ERROR_COMPILE = 2
ERROR_TYPE = 3
ERROR_VALUE = 4
ERROR_INDEX = 5
ERROR_WORKSPACE = 6
ERROR_RUNTIME = 7
ERROR_OUT_OF_MEMORY = 8
ERROR_INTERNAL = 9
ERROR_UNSUPPORTED = 10

API_VERSION = 2

_lib = None


def candidates():
    """Where the library is looked for: $TILEFUSE_LIBRARY alone when set, else
    the build directory of the source tree this package sits in (python/..),
    then the dynamic linker's search for libtilefuse.so."""
    env = os.environ.get("TILEFUSE_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    return [os.path.join(root, "build", "libtilefuse.so"), "libtilefuse.so"]


def _declare(lib):
    c = ctypes
    vp, i32, sz = c.c_void_p, c.c_int, c.c_size_t
    cstr = c.c_char_p
    sigs = {
        "tf_options_init": (None, [vp]),
        "tf_run_options_init": (None, [vp]),
        "tf_compile_source": (i32, [cstr, cstr, vp, c.POINTER(vp)]),
        "tf_compile_file": (i32, [cstr, vp, c.POINTER(vp)]),
        "tf_program_free": (None, [vp]),
        "tf_last_error": (cstr, []),
        "tf_status_name": (cstr, [i32]),
        "tf_version": (cstr, []),
        "tf_api_version": (i32, []),
        "tf_program_signature": (cstr, [vp]),
        "tf_program_num_inputs": (i32, [vp]),
        "tf_program_num_outputs": (i32, [vp]),
        "tf_output_shape": (i32, [vp, vp, i32, i32, vp, i32, c.POINTER(i32)]),
        "tf_run": (i32, [vp, vp, i32, vp, i32, vp, vp]),
        "tf_workspace_size": (i32, [vp, vp, i32, c.POINTER(sz)]),
        "tf_synchronize": (i32, [vp]),
        "tf_explain": (i32, [vp, vp, i32, cstr, c.POINTER(vp)]),
        "tf_tune": (i32, [vp, vp, i32, i32, c.POINTER(vp)]),
        "tf_program_compile_count": (i32, [vp]),
        "tf_free_string": (None, [vp]),
    }
    for name, (restype, argtypes) in sigs.items():
        f = getattr(lib, name)
        f.restype = restype
        f.argtypes = argtypes
    # tf_run once more without argtypes, for the per-call path: ctypes then
    # converts nothing (about half of a call's cost through ctypes), so its
    # callers pass ctypes objects for every pointer (a c_void_p, an array, a
    # byref) and Python ints only for the two int counts.
    raw = lib["tf_run"]
    raw.restype = i32
    raw.argtypes = None
    lib.tf_run_raw = raw


def lib():
    """The loaded library (loaded on first use). Raises ImportError naming every
    path tried when it cannot be loaded."""
    global _lib
    if _lib is not None:
        return _lib
    errors = []
    for path in candidates():
        if os.sep in path and not os.path.exists(path):
            errors.append(f"{path}: no such file")
            continue
        try:
            loaded = ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
            continue
        _declare(loaded)
        if loaded.tf_api_version() != API_VERSION:
            errors.append(
                f"{path}: API version {loaded.tf_api_version()}, this package needs {API_VERSION}")
            continue
        _lib = loaded
        return _lib
    raise ImportError(
        "tilefuse: cannot load libtilefuse.so (build it with scripts/setup.sh, or set "
        "TILEFUSE_LIBRARY to its path): " + "; ".join(errors))


def take_string(ptr):
    """A char* the library returned through char**: its text, then freed."""
    if not ptr:
        return ""
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        lib().tf_free_string(ptr)


def last_error():
    return (lib().tf_last_error() or b"").decode("utf-8", "replace")
