#!/usr/bin/env python3
"""Session 41: a kernel whose second MMA warpgroup runs L k-tiles behind the
first (a hand-written override of an emitted warp-specialized kernel, to time
the idea before any pass is built). Warpgroup 1 starts its first tile's main
loop only after warpgroup 0 has issued k-tile L - 1's wgmma (named barrier 12,
256 threads: 128 arrive, 128 sync). The epilogue is per warp with no block
barrier, so the lag then holds: while warpgroup 0 stores a tile, warpgroup 1
runs its last L k-tiles alone, and while warpgroup 1 stores, warpgroup 0 runs
the next tile's first L alone. The stage ring bounds L: warpgroup 0 can be at
most num_stages k-tiles ahead. Handles register_a (mma_async_rs, unrolled) and
plain (mma_async) main loops.

    mklag.py EMITTED.cu OUT.cu L [every] [wg1] [read]

every: warpgroup 1 waits for warpgroup 0's k-tile L - 1 at every tile, not only
the first. wg1: a kernel emitted with the block timeline records warpgroup 1's
(thread 128's) main-loop ends instead of thread 0's. read: the kernel's last
wait on its TMA stores is for their shared-memory reads only
(cp.async.bulk.wait_group.read 0), not for their writes.
"""
import re
import sys

src, dst, lag = sys.argv[1], sys.argv[2], int(sys.argv[3])
every, wg1, read = ("every" in sys.argv[4:], "wg1" in sys.argv[4:], "read" in sys.argv[4:])
text = open(src).read()


def once(old, new):
    global text
    assert text.count(old) == 1, (old, text.count(old))
    text = text.replace(old, new)


m = re.search(r"tf::setmaxnreg_inc<\d+>\(\);  // the MMA warpgroups' register budget\n", text)
assert m
mma = m.start()
if lag > 0:  # (L = 0: no lag, only the timeline's change below)
    text = (text[:m.end()] + "  const int tf_wg = tf_tid / 128;  // session 41: the lagging warpgroup\n"
            "  bool tf_lag = true;\n" + text[m.end():])
    wait = "if (tf_lag && tf_wg == 1) asm volatile(\"bar.sync 12, 256;\\n\" ::: \"memory\");\n"
    if "mma_async_rs(" in text:
        loop = "  // A's fragments by the MMA warps (register_a)"
        counter = "tf_i"
        issue = "C_f.mma_async_rs(tf_ra[tf_u], B_s + tf_stage * 16384);\n"
    else:
        loop = next(l for l in text[mma:].split("\n") if re.match(r"\s*for \(int tf_it\d+ = 0;", l))
        counter = re.match(r"\s*for \(int (tf_it\d+) = 0;", loop).group(1)
        issue = re.search(r"C_f\.mma_async\(A_s[^\n]*\n", text).group(0)
    i = text.index(loop, mma)
    line_start = text.rindex("\n", 0, i) + 1
    indent = re.match(r"\s*", text[line_start:]).group(0)
    text = text[:line_start] + indent + wait + text[line_start:]
    j = text.index(issue, mma) + len(issue)
    ind = re.match(r"\s*", text[text.rindex("\n", 0, j - len(issue)) + 1:]).group(0)
    text = (text[:j] + f"{ind}if ({counter} == {lag - 1} && tf_lag && tf_wg == 0) "
            "asm volatile(\"bar.arrive 12, 256;\\n\" ::: \"memory\");\n" + text[j:])
    k = re.search(r"\n(\s*)C_f\.wait\(\);\n", text[mma:])
    assert k
    pos = mma + k.end()
    if not every:
        text = text[:pos] + k.group(1) + "tf_lag = false;\n" + text[pos:]
if wg1:
    text, n = re.subn(r"tf::timeline_loop_end\((tf_smem \+ \d+), tf_tid\)", r"tf::timeline_loop_end(\1, tf_tid - 128)", text)
    assert n == 1
if read:
    once("tf::bulk_wait<0>();  // its TMA stores are done before it exits",
         "tf::bulk_wait_read<0>();  // session 41: its TMA stores' shared-memory reads are done")
open(dst, "w").write(text)
