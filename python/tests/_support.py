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
    """Skips the running test (under pytest, or under run.py)."""
    if pytest is not None and os.environ.get("PYTEST_CURRENT_TEST"):
        pytest.skip(reason)
    raise SkipTest(reason)


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
