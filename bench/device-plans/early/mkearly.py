#!/usr/bin/env python3
"""A variant of an emitted persistent register_a kernel (session 38): the MMA threads load their
first tile's two index entries at the kernel's entry, before the mbarrier set-up, the block
barrier and setmaxnreg, instead of after them. The block timeline (session 38, call 3) put the
first stage of gather_heavy's /ra256 kernel at 4.5 µs against 2.7 for the plain kernel: the
index's round trip, then the rows'. This moves the first of the two round trips earlier by the
barrier and the register hand-over.

    mkearly.py EMITTED.cu OUT.cu
"""
import re
import sys

src = open(sys.argv[1]).read()
start = src.index("tf::setmaxnreg_inc<")
end = src.index("long long tf_rav[2] = {};")
pro = src[start:end]
tile = re.search(r"tf::WgmmaTile<[^>]*> C_f;", pro).group(0)[: -len(" C_f;")]
mapping = re.search(r"(    const int pid = static_cast<int>\(blockIdx\.x\);\n(?:    const int .*\n)+)", pro)
assert mapping, "no first-tile mapping in the prologue"
rows = re.findall(r"idx\[\(\(pid_m \* (\d+)\) \+ i\)\]", pro)
assert rows, "no index read in the prologue"
bm = rows[0]
early = ("  long long tf_eidx[2] = {0, 0};  // the first tile's index at this thread's rows, loaded at entry\n"
         "  if (tf_tid < kMmaThreads) {\n" + mapping.group(1).replace("    ", "    ", 1) +
         "    #pragma unroll\n    for (int tf_h = 0; tf_h < 2; ++tf_h)\n"
         f"      tf_eidx[tf_h] = idx[(pid_m * {bm}) + {tile}::fragment_row(tf_h)];\n  }}\n")
anchor = "  const int tf_tid = static_cast<int>(threadIdx.x);\n"
assert anchor in src
pro2 = pro.replace(f"idx[((pid_m * {bm}) + i)]", "tf_eidx[tf_h]")
out = src[:start] + pro2 + src[end:]
out = out.replace(anchor, anchor + early, 1)
open(sys.argv[2], "w").write(out)
