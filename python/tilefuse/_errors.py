"""tilefuse's exceptions and the mapping from the C API's status codes."""

import re

from . import _lib


class Error(RuntimeError):
    """A failure tilefuse reports that is not a problem of one argument: no usable
    GPU, a CUDA or NVRTC failure, a kernel the GPU cannot run."""


class CompileError(Error):
    """A malformed program. The message is the diagnostic: file:line:col, the
    source line and a caret."""


class InternalError(Error):
    """A bug in tilefuse (please report it with the program)."""


class Unsupported(Error):
    """A request there is nothing to do for here: Kernel.tune where no CUDA device
    is usable or on a kernel compiled with device="cpu" (tuning needs a GPU)."""


_INDEX_MESSAGE = re.compile(
    r"index (-?\d+) is out of bounds for dim (\d+) of (.+?) \(size (\w+)\): (.+?)(\[[^\]]*\])? = (-?\d+)"
    r"(?: \(.*\))?$")
# The "file:line:col: " a run-time error starts with when it knows its place in the program.
_LOCATION = re.compile(r"^(.+?):(\d+):(\d+): ")


class IndexOutOfRange(IndexError):
    """An index value outside [-size, size) (x[idx]) or [0, size) (index_select) found at
    run time. The message starts at the indexing's place in the program and names the
    indexed tensor, the index tensor, the position and the value, e.g.
        gather.tfs:2:14: index 9 is out of bounds for dim 0 of `x` (size 9): `idx`[1] = 9
    and so do the attributes `location` (("gather.tfs", 2, 14)), `tensor` ("x"),
    `index_tensor` ("idx"), `position` ((1,)), `value` (9) and `dim` (0), where the
    message has them. On CUDA it is raised by a later call or by tilefuse.synchronize()
    (see Kernel.__call__)."""

    def __init__(self, message):
        super().__init__(message)
        self.tensor = self.index_tensor = self.position = self.value = self.dim = None
        self.location = None
        loc = _LOCATION.match(message)
        if loc:
            self.location = (loc.group(1), int(loc.group(2)), int(loc.group(3)))
        m = _INDEX_MESSAGE.search(message)
        if m:
            self.value = int(m.group(1))
            self.dim = int(m.group(2))
            self.tensor = m.group(3).strip("`")
            self.index_tensor = m.group(5).strip("()`")
            pos = m.group(6)
            self.position = tuple(int(p) for p in pos[1:-1].split(",")) if pos else ()


def raise_for(status, message=None):
    """Raises the exception of a tf_status (nothing for OK)."""
    if status == _lib.OK:
        return
    if message is None:
        message = _lib.last_error()
    if status == _lib.ERROR_COMPILE:
        raise CompileError(message)
    if status == _lib.ERROR_TYPE:
        raise TypeError(message)
    if status in (_lib.ERROR_VALUE, _lib.ERROR_INVALID_ARGUMENT, _lib.ERROR_WORKSPACE):
        raise ValueError(message)
    if status == _lib.ERROR_INDEX:
        raise IndexOutOfRange(message)
    if status == _lib.ERROR_OUT_OF_MEMORY:
        raise MemoryError(message)
    if status == _lib.ERROR_INTERNAL:
        raise InternalError(message)
    if status == _lib.ERROR_UNSUPPORTED:
        raise Unsupported(message)
    raise Error(message)
