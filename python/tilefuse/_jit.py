"""@tilefuse.jit: a Python function whose annotations are .tfs types, compiled by
tilefuse and runnable by PyTorch eager too."""

import ast
import functools
import inspect
import textwrap

from . import _kernel


def _char_col(line, byte_col):
    """The character index in `line` of UTF-8 byte offset `byte_col` (what ast's col_offset and
    end_col_offset count)."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


# The control picture U+240C that diagnostics show a form feed as (frontend/diagnostic.cpp).
_FORM_FEED_SHOWN = "\u240c"


def _source_of(fn):
    """The function's text as a .tfs program (see _program_of)."""
    return _program_of(fn)[0]


def _program_of(fn):
    """The function's text as a .tfs program, and the indentation its lines have in the file
    ("" at module level): the string annotations of its parameters and its return unquoted (each
    quote replaced by a space), every line where it is in the file, so a diagnostic's line and
    column (and a column a message quotes) are the file's.

    A method or a nested function is indented, and a program is one top-level `def`: the last
    character of each line's common indentation becomes a form feed, which resets the
    indentation count (Python's rule, which the .tfs lexer follows) but keeps its column.
    (Dedenting it instead left every column short by the indentation.)"""
    from ._errors import CompileError
    if getattr(fn, "__name__", "") == "<lambda>":
        raise CompileError(f"@tilefuse.jit needs a function defined with `def`, not a lambda "
                           f"({fn.__qualname__})")
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise CompileError(f"@tilefuse.jit needs the source of {fn.__qualname__} (defined in a "
                           f"file, not typed at a prompt): {e}") from None
    text = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise CompileError(f"@tilefuse.jit could not read the source of {fn.__qualname__} as a "
                           f"`def`: {e}") from None
    func = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                None)
    if func is None:
        raise CompileError(f"@tilefuse.jit needs a function defined with `def`; the source of "
                           f"{fn.__qualname__} holds none")
    rows = text.splitlines(keepends=True)
    args = func.args.posonlyargs + func.args.args + func.args.kwonlyargs
    # The return annotation too (`-> "f16[M, 2048]"`): the parser checks it.
    for ann in [a.annotation for a in args] + [func.returns]:
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            row = ann.lineno - 1
            line = rows[row]
            # (ast's column offsets count UTF-8 bytes; the line is characters)
            start, end = _char_col(line, ann.col_offset), _char_col(line, ann.end_col_offset)
            if ann.lineno != ann.end_lineno:
                continue
            # The literal's prefix (r, u) and its quotes, ' " ''' or """, become spaces.
            literal = line[start:end]
            body = literal.lstrip("rRuU")
            prefix = len(literal) - len(body)
            quote = body[:3] if body[:3] in ("'''", '"""') else body[:1]
            if quote in ("'", '"', "'''", '"""') and len(body) >= 2 * len(quote) and \
                    body.endswith(quote) and body[len(quote):len(body) - len(quote)] == ann.value:
                skip = prefix + len(quote)
                rows[row] = (line[:start] + " " * skip + ann.value + " " * len(quote) +
                             line[end:])
    # The file's indentation back, its last character a form feed (blank lines stay blank).
    original = "".join(lines).splitlines(keepends=True)
    margin = ""
    for before, after in zip(original, rows):
        if after.strip():
            margin = before[:len(before) - len(after)]
            break
    if margin:
        rows = [margin[:-1] + "\f" + r if r.strip() else r for r in rows]
    # Decorators are accepted by the .tfs parser; blank lines keep numbering.
    return "\n" * (first - 1) + "".join(rows), margin


def _shown_as_in_file(message, margin):
    """A CompileError's text with its echoed source line (the second) as the file has it: the
    form feed _program_of put in the indentation, which the diagnostic shows as U+240C, back to
    the character it replaced; and in the caret line (the third, which copies the source line's
    tabs and has a space for every other character) that character too, so that the caret lines
    up under a tab-indented line as well."""
    if not margin:
        return message
    lines = message.split("\n")
    marked = "  " + margin[:-1] + _FORM_FEED_SHOWN
    if len(lines) > 1 and lines[1].startswith(marked):
        lines[1] = "  " + margin + lines[1][len(marked):]
        under = "  " + margin[:-1] + " "
        if len(lines) > 2 and lines[2].startswith(under):
            lines[2] = "  " + margin + lines[2][len(under):]
    return "\n".join(lines)


class JitFunction:
    """A function compiled by tilefuse on first use. Calling it runs the kernels
    (tilefuse.Kernel.__call__); .eager(...) runs the Python body itself (e.g. in
    PyTorch eager) to compare; .kernel is the compiled Kernel."""

    def __init__(self, fn, options):
        # (Anything else failed at the first call, with inspect's message about
        # "module, class, method, ... was expected".)
        if not inspect.isfunction(fn):
            raise TypeError(f"@tilefuse.jit needs a function defined with `def`, got "
                            f"{type(fn).__name__} {fn!r}")
        self._fn = fn
        self._options = options
        self._kernel = None
        functools.update_wrapper(self, fn)

    @property
    def kernel(self):
        if self._kernel is None:
            from ._errors import CompileError
            file = inspect.getsourcefile(self._fn) or "<jit>"
            text, margin = _program_of(self._fn)
            try:
                self._kernel = _kernel.compile(text, name=file, **self._options)
            except CompileError as e:
                raise CompileError(_shown_as_in_file(str(e), margin)) from None
        return self._kernel

    def __call__(self, *args, **kwargs):
        return self.kernel(*args, **kwargs)

    def eager(self, *args, **kwargs):
        """The undecorated Python function on the same arguments."""
        return self._fn(*args, **kwargs)

    def explain(self, *example_args, **kwargs):
        return self.kernel.explain(*example_args, **kwargs)

    def tune(self, **sizes):
        return self.kernel.tune(**sizes)


def jit(fn=None, **options):
    """Decorates a function written in the .tfs subset of PyTorch whose parameter
    annotations are .tfs types as strings:

        @tilefuse.jit
        def gather_mm(x: "f16[T, 4096]", w: "f16[4096, N]", idx: "i64[M] in [0, T)"):
            return x[idx] @ w

    gather_mm(x, w, idx) runs tilefuse's kernels; gather_mm.eager(x, w, idx) runs
    the same body in PyTorch eager. Options are tilefuse.compile's
    (@tilefuse.jit(device="cuda", plan="fused")). The program is compiled at the
    first call (or .kernel); a malformed one raises tilefuse.CompileError there,
    pointing into the function's file."""
    if fn is None:
        return lambda f: JitFunction(f, options)
    return JitFunction(fn, options)
