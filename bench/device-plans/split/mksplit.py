#!/usr/bin/env python3
"""Session 43: a warpgroup's 64 x 256 wgmma as two independent m64n128k16 chains (the N halves:
B's 128-byte strips 0-1 and 2-3) where the emitted kernel issues one m64n256k16 chain: the same
accumulators (element e = n8 * 4 + q either way), B bytes and A bytes, two instructions a k16
step. A hand-written override of an emitted warp-specialized kernel (plain `mma_async` or
register_a's `mma_async_rs`), to time whether a warpgroup with two chains fills the tensor pipe
where one chain does not (wg1/wgrate.cu), alone or with bench/device-plans/lag/mklag.py's lag
applied after it.

    mksplit.py EMITTED.cu OUT.cu
"""
import re
import sys

src, dst = sys.argv[1], sys.argv[2]
text = open(src).read()

HELPER = r'''
// [split] one warpgroup's m64n256 as two m64n128 chains (session 43, bench/device-plans/split).
template <class Tile, class T>
__device__ __forceinline__ void tfx_mma_split(Tile& C, const T* As, const T* Bs) {
  static_assert(Tile::WN == 256, "split: 256-wide warpgroups");
  const int g = Tile::wg(threadIdx.x);
  const unsigned a0 = tf::smem_addr(As) + g * Tile::WM * Tile::kRowBytes;
  const unsigned b0 = Tile::b_base(Bs);
  constexpr int kBK = Tile::kRowBytes / 2;
  const unsigned long long da0 = tf::wgmma_desc<Tile::kRowBytes>(a0, 16, 8 * Tile::kRowBytes);
  const unsigned long long db0 = tf::wgmma_desc(b0, kBK * 128, 1024);
  C.fence_operands();
  tf::wgmma_fence();
#pragma unroll
  for (int s = 0; s < kBK / 16; ++s) {
    const unsigned long long da = tf::wgmma_desc_advance(da0, s * 32);
    tf::WgmmaOp<T, 128>::run(&C.c[0], da, tf::wgmma_desc_advance(db0, s * 16 * 128));
    tf::WgmmaOp<T, 128>::run(&C.c[64], da, tf::wgmma_desc_advance(db0, s * 16 * 128 + 2 * kBK * 128));
  }
  tf::wgmma_commit();
}
'''
HELPER += r'''template <class T, class Tile>
__device__ __forceinline__ void tfx_mma_rs_split(Tile& C, const unsigned (&a)[16], const T* Bs) {
  static_assert(Tile::WN == 256 && Tile::MT == 1, "split: 64 x 256 warpgroups");
  const unsigned long long db0 = Tile::b_desc(Tile::b_base(Bs), 0);
  C.fence_operands();
  tf::wgmma_fence();
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    const int u = s / 2, v = s % 2;
    const unsigned long long db = tf::wgmma_desc_advance(db0, s * 16 * 128);
    tf::WgmmaOpRs<T, 128>::run(&C.c[0], a[4 * u + 2 * v], a[8 + 4 * u + 2 * v], a[4 * u + 2 * v + 1],
                               a[8 + 4 * u + 2 * v + 1], db);
    tf::WgmmaOpRs<T, 128>::run(&C.c[64], a[4 * u + 2 * v], a[8 + 4 * u + 2 * v], a[4 * u + 2 * v + 1],
                               a[8 + 4 * u + 2 * v + 1], tf::wgmma_desc_advance(db, 2 * 64 * 128));
  }
  tf::wgmma_commit();
}
'''
m = re.search(r'#include "tf_wgmma.cuh"\n', text)
assert m
text = text[:m.end()] + HELPER + text[m.end():]
tile_t = re.search(r"tf::WgmmaTile<(tf::\w+), (\d+), (\d+), (\d+), (\d+), (\d+)> C_f;", text)
assert tile_t and tile_t.group(3) == "256" and tile_t.group(6) == "1", "split: a 128x256 tile, 2x1 warpgroups"
elem = tile_t.group(1)
n = 0
text, k = re.subn(r"C_f\.mma_async\((A_s[^,]*), (B_s[^;]*)\);", r"tfx_mma_split(C_f, \1, \2);", text)
n += k
text, k = re.subn(r"C_f\.mma_async_rs\((tf_ra\[[^\]]*\]), (B_s[^;]*)\);", r"tfx_mma_rs_split<" + elem + r">(C_f, \1, \2);", text)
n += k
assert n >= 1, "split: no wgmma issue found"
open(dst, "w").write(text)
print(f"{dst}: {n} wgmma issue(s) split")
