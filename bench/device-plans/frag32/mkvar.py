#!/usr/bin/env python3
"""A variant of an emitted register_a kernel (session 46): its A-fragment loads without predicates,
a masked row's loads (its row out of range, or a k-tile past the end) reading a 128-byte zero row
instead, so ptxas merges no zero into the loaded registers.

ncu on gather_heavy's /persistent/ra256 kernel (session 46, call43) put 31% of the MMA warps'
main-loop stall samples on the IMAD.MOVs that copy each predicated 16-byte load's registers into
wgmma's register-A order (a0..a3 take rows r, r + 8, r, r + 8: no vector load writes that order),
placed a k-tile after the load: the wait for the row is a k-tile long, not the three of the lead.

    mkvar.py EMITTED.cu OUT.cu VARIANT
      lf32zc   16 32-bit loads a k-tile, each into its wgmma register (no copies), ld.global
      lf32z    as lf32zc with ld.global.nc (ptxas then sinks them: a lead of 2 k-tiles)
      lf128zc  4 16-byte loads a k-tile as emitted but unpredicated, ld.global (the copies stay)
"""
import re
import sys

src = open(sys.argv[1]).read()
variant = sys.argv[3]
m = re.search(r"tf::load_a_fragment(?:<(\w+), (\w+)>)?\(", src)
assert m, "no load_a_fragment in the kernel"
qual = (".L1::no_allocate" if m.group(1) == "true" else "") + (".L2::256B" if m.group(2) == "true" else "")
op = {"lf32zc": "ld.global", "lf32z": "ld.global.nc", "lf128zc": "ld.global"}[variant] + qual
lines = []
for reg0, addr in [(0, "%16"), (4, "%16+64"), (8, "%17"), (12, "%17+64")]:
    if variant.startswith("lf32"):
        lines += [f" {op}.b32 %{reg0 + j}, [{addr}+{4 * j}];" for j in range(4)]
    else:
        lines.append(f" {op}.v4.u32 {{%{reg0}, %{reg0 + 1}, %{reg0 + 2}, %{reg0 + 3}}}, [{addr}];")
outs = ", ".join(f'"=r"(a[{i}])' for i in range(16))
fn = (
    "__device__ __align__(128) unsigned tf_zero_row[32];  // a masked row's loads read zeros here\n"
    "__device__ __forceinline__ void tf_lf(unsigned (&a)[16], const char* p0, const char* p1, bool ok0, bool ok1) {\n"
    "  const char* z = reinterpret_cast<const char*>(tf_zero_row);\n"
    "  p0 = ok0 ? p0 : z;\n  p1 = ok1 ? p1 : z;\n"
    '  asm volatile("{\\n"\n' + "".join(f'    "{l}\\n"\n' for l in lines) + '    "}\\n"\n'
    f'    : {outs}\n    : "l"(p0), "l"(p1) : "memory");\n}}\n'
)
src = re.sub(r"tf::load_a_fragment(?:<\w+, \w+>)?\(", "tf_lf(", src)
anchor = 'extern "C" __global__'
assert anchor in src
src = src.replace(anchor, fn + anchor, 1)
open(sys.argv[2], "w").write(src)
