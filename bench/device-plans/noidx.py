#!/usr/bin/env python3
"""The seed's index-latency bound (session 34): a copy of the emitted seed register_a kernel whose
fragment rows are `cse + i`, not `index[cse + i]`, and whose row checks always pass. Its results
are wrong (run it with --no-check); its schedule is the kernel's (SASS: 3 k-tiles ahead, 0 spills).

    noidx.py EMITTED.cu OUT.cu
"""
import sys

s = open(sys.argv[1]).read()
old = "&x[((index[(cse + i)] < 0ll) ? (index[(cse + i)] + 2048ll) : index[(cse + i)]) * 2048ll"
assert s.count(old) == 1, "the seed's fragment row address as emitted at session 33"
s = s.replace(old, "&x[static_cast<long long>(cse + i) * 2048ll")
s = s.replace("const bool tf_ok = ((index[(cse + i)] >= -2048ll) && (index[(cse + i)] < 2048ll));",
              "const bool tf_ok = true;")
open(sys.argv[2], "w").write(s)
