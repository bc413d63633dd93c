#!/usr/bin/env python3
"""The gathered source's leading bytes prefetched into L2 at the kernel's entry, before any block
knows its index (session 42): hand-written variants of an emitted warp-specialized kernel.

    mkpre.py EMITTED.cu OUT.cu VARIANT

Session 39's block timeline put the gathered kernels' excess over the plain GEMM in the first
stage (the index's DRAM round trip, then the rows' own) and, in persistent kernels, in the first
two tiles. Every earlier prefetch (sessions 35, 40) started after the index had landed, so the
rows' round trip stayed behind the index's. Here the rows are not known yet: the blocks split the
source x's rows between them and each producer thread of warps 1..3 (warp 0 issues B's TMA) asks
L2 for its share of every row's first P bytes (the k-tiles the first stages read). When a block's
index lands, its rows' first k-tiles are then L2 hits, so the two round trips overlap. The bytes
are the source's leading columns, S rows x P; they are not extra where the kernel reads every
source row (the seed's one wave reads all 2048 rows at once), and they stay in L2 for later tiles
elsewhere (gather_heavy: 2 MiB at P = 128 of a 50 MiB L2).

  lsuP   prefetch.global.L2 of each 128-byte line (the LSU path), P in {128, 256, 512}
  bulkP  one cp.async.bulk.prefetch.L2 of P bytes a row (PTX ISA 9.7.9.25.4.4; the TMA unit)

A prefetch changes no value and reads only inside x (rows 0..S-1, bytes 0..P-1 of each row,
P <= the row's bytes).
"""
import re
import sys

HELPER = '''
// [pre] PTX ISA 9.7.9.25.4.4 (cp.async.bulk.prefetch.L2: size a multiple of 16, 16-aligned) and
// 9.7.9.15 (prefetch.global.L2)
__device__ __forceinline__ void tfx_prefetch_bulk(const void* p, unsigned bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(p), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tfx_prefetch_line(const void* p) {
  asm volatile("prefetch.global.L2 [%0];" :: "l"(p) : "memory");
}
'''


def main():
    src_path, out_path, var = sys.argv[1], sys.argv[2], sys.argv[3]
    s = open(src_path).read()
    m = re.search(r"tf_ok \? &x\[\(\((\w+)\[[^\]]*\] < 0ll\) \? \(\w+\[[^\]]*\] \+ (\d+)ll\) : "
                  r"\w+\[[^\]]*\]\) \* (\d+)ll", s)
    assert m, "no gathered x row address in the kernel"
    rows, stride = int(m.group(2)), int(m.group(3))
    elem = 2 if re.search(r"const tf::(f16|bf16)\* __restrict__ x,", s) else 4
    row_bytes = stride * elem
    kind, nbytes = re.fullmatch(r"(lsu|bulk)(\d+)", var).groups()
    nbytes = int(nbytes)
    assert nbytes % 128 == 0 and nbytes <= row_bytes
    anchor = "    const int tf_ptid = tf_tid - kMmaThreads;\n"
    assert s.count(anchor) == 1, "no producer branch"
    if kind == "lsu":
        lpr = nbytes // 128
        body = f'''    if (tf_ptid >= 32) {{  // [pre] x's first {nbytes} bytes a row into L2, the rows split between the blocks
      constexpr long long kLines = {rows}ll * {lpr};
      const long long tf_per = (kLines + gridDim.x - 1) / gridDim.x;
      const long long tf_pb = static_cast<long long>(blockIdx.x) * tf_per;
      const long long tf_pe = tf_pb + tf_per < kLines ? tf_pb + tf_per : kLines;
      for (long long tf_l = tf_pb + (tf_ptid - 32); tf_l < tf_pe; tf_l += 96)
        tfx_prefetch_line(reinterpret_cast<const char*>(x) + (tf_l / {lpr}) * {row_bytes}ll + (tf_l % {lpr}) * 128);
    }}
'''
    else:
        body = f'''    if (tf_ptid >= 32) {{  // [pre] x's first {nbytes} bytes a row into L2 (one bulk prefetch a row), the rows split between the blocks
      constexpr long long kRows = {rows}ll;
      const long long tf_per = (kRows + gridDim.x - 1) / gridDim.x;
      const long long tf_pb = static_cast<long long>(blockIdx.x) * tf_per;
      const long long tf_pe = tf_pb + tf_per < kRows ? tf_pb + tf_per : kRows;
      for (long long tf_r = tf_pb + (tf_ptid - 32); tf_r < tf_pe; tf_r += 96)
        tfx_prefetch_bulk(reinterpret_cast<const char*>(x) + tf_r * {row_bytes}ll, {nbytes}u);
    }}
'''
    s = s.replace(anchor, anchor + body)
    s = s.replace('extern "C" __global__', HELPER + 'extern "C" __global__', 1)
    open(out_path, "w").write(s)
    print(f"{out_path}: {var}, x rows {rows}, row bytes {row_bytes}, {rows * nbytes / 2**20:.2f} MiB prefetched")


if __name__ == "__main__":
    main()
