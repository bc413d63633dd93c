"""Runs the test modules without pytest (the GPU machine's Python may lack it):
every test_* function of test_*.py here, in file order; prints PASS / SKIP /
FAIL per test and a summary; exit 1 when any failed.

    PYTHONPATH=python python3 python/tests/run.py [module ...] [-k substring]
With pytest installed, `python3 -m pytest python/tests` runs the same tests."""

import importlib.util
import inspect
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _support  # noqa: E402


def main(argv):
    names = [a for a in argv if not a.startswith("-") and a.endswith(".py")]
    key = argv[argv.index("-k") + 1] if "-k" in argv else ""
    files = names or sorted(f for f in os.listdir(HERE) if f.startswith("test_") and f.endswith(".py"))
    passed = skipped = failed = 0
    for f in files:
        spec = importlib.util.spec_from_file_location(f[:-3], os.path.join(HERE, os.path.basename(f)))
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
        except _support.SkipTest as e:
            print(f"SKIP {f}: {e}")
            skipped += 1
            continue
        tests = [(n, fn) for n, fn in vars(mod).items() if n.startswith("test_") and callable(fn)]
        tests.sort(key=lambda t: inspect.getsourcelines(t[1])[1])
        for n, fn in tests:
            if key and key not in n:
                continue
            t0 = time.time()
            try:
                fn()
                print(f"PASS {f}::{n} ({time.time() - t0:.2f} s)")
                passed += 1
            except _support.SkipTest as e:
                print(f"SKIP {f}::{n}: {e}")
                skipped += 1
            except Exception:
                print(f"FAIL {f}::{n}")
                traceback.print_exc()
                failed += 1
    print(f"{passed} passed, {skipped} skipped, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
