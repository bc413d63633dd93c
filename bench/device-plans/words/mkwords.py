#!/usr/bin/env python3
"""A variant of an emitted persistent register_a kernel (session 38): some of the MMA warps'
fragment loads read 4-byte words straight into the wgmma operand registers, instead of 16-byte
chunks into temporaries that ptxas then copies (IMAD.MOV) into the operand quads. The copies of
the next tile's last-issued k-tile sit before the epilogue and wait on a load issued one HGMMA
earlier (bench/RESULTS.md, sessions 33 and 35); a load with no copy leaves the epilogue free.

    mkwords.py EMITTED.cu OUT.cu MODE
    MODE: cross  the next tile's loads (k-tile i + 3 >= the tile's k-tiles) as words
          last2  the next tile's k-tiles 1 and 2 as words (k-tile 0 keeps 16-byte chunks)
          last1  the next tile's k-tile 2 only
          all    every fragment load as words
"""
import re
import sys

src = open(sys.argv[1]).read()
mode = sys.argv[3]
nk = int(re.search(r"const bool tf_here = tf_kn < (\d+);", src).group(1))
cond = {"cross": "tf_here", "last2": f"tf_kn < {nk + 1}", "last1": f"tf_kn < {nk + 2}"}.get(mode)
assert cond or mode == "all", f"unknown mode {mode}"
words = r'''
__device__ __forceinline__ void tf_load_a_words(unsigned (&a)[16], const char* p0, const char* p1, bool ok0, bool ok1) {
  asm volatile(
      "{\n .reg .pred p, q;\n setp.ne.b32 p, %18, 0;\n setp.ne.b32 q, %19, 0;\n"
      " mov.b32 %0, 0; mov.b32 %1, 0; mov.b32 %2, 0; mov.b32 %3, 0;\n"
      " mov.b32 %4, 0; mov.b32 %5, 0; mov.b32 %6, 0; mov.b32 %7, 0;\n"
      " mov.b32 %8, 0; mov.b32 %9, 0; mov.b32 %10, 0; mov.b32 %11, 0;\n"
      " mov.b32 %12, 0; mov.b32 %13, 0; mov.b32 %14, 0; mov.b32 %15, 0;\n"
      " @p ld.global.nc.L2::256B.u32 %0, [%16];\n @p ld.global.nc.L2::256B.u32 %1, [%16+4];\n"
      " @p ld.global.nc.L2::256B.u32 %2, [%16+8];\n @p ld.global.nc.L2::256B.u32 %3, [%16+12];\n"
      " @p ld.global.nc.L2::256B.u32 %4, [%16+64];\n @p ld.global.nc.L2::256B.u32 %5, [%16+68];\n"
      " @p ld.global.nc.L2::256B.u32 %6, [%16+72];\n @p ld.global.nc.L2::256B.u32 %7, [%16+76];\n"
      " @q ld.global.nc.L2::256B.u32 %8, [%17];\n @q ld.global.nc.L2::256B.u32 %9, [%17+4];\n"
      " @q ld.global.nc.L2::256B.u32 %10, [%17+8];\n @q ld.global.nc.L2::256B.u32 %11, [%17+12];\n"
      " @q ld.global.nc.L2::256B.u32 %12, [%17+64];\n @q ld.global.nc.L2::256B.u32 %13, [%17+68];\n"
      " @q ld.global.nc.L2::256B.u32 %14, [%17+72];\n @q ld.global.nc.L2::256B.u32 %15, [%17+76];\n"
      "}\n"
      : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]), "=r"(a[4]), "=r"(a[5]), "=r"(a[6]),
        "=r"(a[7]), "=r"(a[8]), "=r"(a[9]), "=r"(a[10]), "=r"(a[11]), "=r"(a[12]), "=r"(a[13]),
        "=r"(a[14]), "=r"(a[15])
      : "l"(p0), "l"(p1), "r"(ok0 ? 1u : 0u), "r"(ok1 ? 1u : 0u)
      : "memory");
}
'''
src = src.replace('#include "tf_wgmma.cuh"\n', '#include "tf_wgmma.cuh"\n' + words, 1)
pat = re.compile(r'( *)tf::load_a_fragment<false, true>\(tf_ra\[\(tf_u \+ 3\) % 4\], (.*)\);\n')
m = pat.search(src)
assert m, "no main-loop fragment load"
ind, args = m.group(1), m.group(2)
if mode == "all":
    new = f"{ind}tf_load_a_words(tf_ra[(tf_u + 3) % 4], {args});\n"
else:
    new = (f"{ind}if ({cond}) tf::load_a_fragment<false, true>(tf_ra[(tf_u + 3) % 4], {args});\n"
           f"{ind}else tf_load_a_words(tf_ra[(tf_u + 3) % 4], {args});\n")
src = src[:m.start()] + new + src[m.end():]
open(sys.argv[2], "w").write(src)
