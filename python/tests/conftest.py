"""pytest's hook-up for the tests here: _support.skip then skips through pytest
(run.py runs the same tests without pytest)."""

import os
import sys

os.environ["TILEFUSE_UNDER_PYTEST"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
