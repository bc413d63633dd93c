#!/usr/bin/env python3
"""Session 44: the split tail. A kernel override of an emitted warp-specialized kernel whose MMA
warpgroups each hold a 64 x 256 accumulator and read A from shared memory (`C_f.mma_async`): the
tile's last T k-tiles are issued as two chains, first the N half 0 (columns 0-127, B strips 0-1)
of all T, then the N half 1 of all T, as separate wgmma groups. The epilogue then waits for all
but the last T groups (half 0 done), stores half 0's slabs while half 1's tail still runs on the
tensor pipe, and only then waits for half 1 and stores its slabs. So half the epilogue overlaps
T half-k-tiles of wgmma (T * 512 tensor-pipe cycles at 128x256x64), where the emitted kernel runs
its whole epilogue with the pipe idle (a one-wave kernel's last epilogue is its critical path).

In a persistent kernel the tail's stages are released after their half-1 groups complete
(k-tile NK-T-1 after the half-0 wait, the tail's T after the final one), so the producer's lead
into the next tile shrinks by T - 1 stages at the tile's end; T = 2 keeps two.

    mktail.py EMITTED.cu OUT.cu T
"""
import re
import sys

src, dst, T = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(src).read()

HELPER = r'''
// [tail] session 44 (bench/device-plans/tail): one N half (H) of a 64 x 256 warpgroup's k-tile as
// one wgmma group of m64n128k16 (accumulators c[64H .. 64H + 64), B strips 2H and 2H + 1).
template <int H, class Tile, class T>
__device__ __forceinline__ void tfx_mma_half(Tile& C, const T* As, const T* Bs) {
  static_assert(Tile::WN == 256 && Tile::MT == 1, "tail: 64 x 256 warpgroups");
  const int g = Tile::wg(threadIdx.x);
  const unsigned a0 = tf::smem_addr(As) + g * Tile::WM * Tile::kRowBytes;
  const unsigned b0 = Tile::b_base(Bs);
  constexpr int kBK = Tile::kRowBytes / 2;
  const unsigned long long da0 = tf::wgmma_desc<Tile::kRowBytes>(a0, 16, 8 * Tile::kRowBytes);
  const unsigned long long db0 = tf::wgmma_desc(b0, kBK * 128, 1024);
#pragma unroll
  for (int e = 64 * H; e < 64 * H + 64; ++e) asm volatile("" : "+f"(C.c[e])::"memory");
  tf::wgmma_fence();
#pragma unroll
  for (int s = 0; s < kBK / 16; ++s) {
    const unsigned long long da = tf::wgmma_desc_advance(da0, s * 32);
    tf::WgmmaOp<T, 128>::run(&C.c[64 * H], da, tf::wgmma_desc_advance(db0, s * 16 * 128 + H * 2 * kBK * 128));
  }
  tf::wgmma_commit();
}
// The same with A from registers (register_a's fragment a of the k-tile, WgmmaTile::mma_async_rs).
template <int H, class T, class Tile>
__device__ __forceinline__ void tfx_mma_rs_half(Tile& C, const unsigned (&a)[16], const T* Bs) {
  static_assert(Tile::WN == 256 && Tile::MT == 1, "tail: 64 x 256 warpgroups");
  const unsigned long long db0 = Tile::b_desc(Tile::b_base(Bs), 0);
#pragma unroll
  for (int e = 64 * H; e < 64 * H + 64; ++e) asm volatile("" : "+f"(C.c[e])::"memory");
  tf::wgmma_fence();
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    const int u = s / 2, v = s % 2;
    const unsigned long long db = tf::wgmma_desc_advance(db0, s * 16 * 128 + H * 2 * 64 * 128);
    tf::WgmmaOpRs<T, 128>::run(&C.c[64 * H], a[4 * u + 2 * v], a[8 + 4 * u + 2 * v], a[4 * u + 2 * v + 1],
                               a[8 + 4 * u + 2 * v + 1], db);
  }
  tf::wgmma_commit();
}
// Pins accumulators [LO, HI) after a wgmma wait (their reads stay after it).
template <int LO, int HI, class Tile>
__device__ __forceinline__ void tfx_pin(Tile& C) {
#pragma unroll
  for (int e = LO; e < HI; ++e) asm volatile("" : "+f"(C.c[e])::"memory");
}
'''
m = re.search(r'#include "tf_wgmma.cuh"\n', text)
assert m
text = text[:m.end()] + HELPER + text[m.end():]
tile_t = re.search(r"tf::WgmmaTile<(tf::\w+), (\d+), (\d+), (\d+), (\d+), (\d+)> C_f;", text)
assert tile_t and tile_t.group(3) == "256" and tile_t.group(2) == "128" and tile_t.group(6) == "1", \
    "tail: a 128x256 tile, 2x1 warpgroups"

def split_epilogue(text, search_from, mid):
    """Cuts the per-warp slab epilogue after half 0's slabs (kSlabs / 2), `mid` between."""
    em = re.search(r"([ ]*)#pragma unroll\n[ ]*for \(int (tf_s\d+) = 0; \2 < decltype\(C_f\)::kSlabs; \+\+\2\) \{\n",
                   text[search_from:])
    assert em, "tail: no per-warp slab epilogue"
    start = search_from + em.start()
    depth, i = 0, search_from + em.end() - 2
    while True:
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                break
        i += 1
    end = i + 2
    loop_text, sv, eind = text[start:end], em.group(2), em.group(1)
    first = loop_text.replace(f"{sv} < decltype(C_f)::kSlabs", f"{sv} < decltype(C_f)::kSlabs / 2")
    second = loop_text.replace(f"int {sv} = 0; {sv} < decltype(C_f)::kSlabs",
                               f"int {sv} = decltype(C_f)::kSlabs / 2; {sv} < decltype(C_f)::kSlabs")
    return text[:start] + first + mid(eind) + second + text[end:]


if "C_f.mma_async_rs(" in text:
    # register_a: the fully unrolled loop over k-tiles (outer step 4, inner tf_u), A's fragment of
    # k-tile i in tf_ra[i % 4], k-tile i + 3's load after k-tile i's wgmma into the slot k-tile
    # i - 1 read. In the tail (T <= 3), half 0 of k-tile i is issued in the loop; the load into
    # k-tile i - 1's slot waits while half 1 of k-tile i - 1 may still read it, so the tail's
    # loads after its first (the next tile's k-tiles 4 - T .. 2) move after the final wait.
    outer = re.search(r"for \(int tf_it0 = 0; tf_it0 < (\d+); tf_it0 \+= 4\) \{\n", text)
    assert outer, "tail: no register_a loop"
    nk = int(outer.group(1))
    assert 1 <= T <= 3 and nk % 4 == 0 and T < nk, "tail: register_a takes T <= 3"
    nkt = nk - T
    inner = re.compile(
        r"(?P<ind>[ ]*)for \(int tf_u = 0; tf_u < 4; \+\+tf_u\) \{\n"
        r"(?P<head>[ ]*const int tf_i = [^\n]*\n(?P<stage>[ ]*const int tf_stage = [^\n]*\n)[ ]*tf::mbar_wait[^\n]*\n)"
        r"[ ]*C_f\.mma_async_rs\(tf_ra\[tf_u\], (?P<b>B_s[^;]*)\);\n"
        r"(?P<wp>[ ]*C_f\.wait_prior\(\);[^\n]*\n)"
        r"(?P<rel>[ ]*if \(tf_i > 0\) tf::mbar_arrive\([^\n]*\n)"
        r"(?P<load>(?:.*\n)*?)"
        r"(?P=ind)\}\n"
        r"(?P<oind>[ ]*)\}\n"
        r"[ ]*C_f\.wait\(\);\n"
        r"(?P<last>[ ]*if \(\d+ > 0\) tf::mbar_arrive\(&tf_empty\[\(tf_git \+ \d+ - 1\) % (?P<s>\d+)\]\);\n)?")
    mm = inner.search(text, outer.end())
    assert mm, "tail: register_a loop body not recognized"
    ind, oind = mm["ind"], mm["oind"]
    i2, i3 = ind + "  ", ind + "    "
    elem = tile_t.group(1)
    persistent = mm["last"] is not None
    body = (mm["head"]
            + f"{i2}if (tf_i < {nkt}) {{\n"
            + f"{i3}C_f.mma_async_rs(tf_ra[tf_u], {mm['b']});\n" + mm["wp"].replace(i2, i3, 1)
            + mm["rel"].replace(i2, i3, 1)
            + f"{i2}}} else {{  // [tail] half 0 of the tail's k-tiles; half 1 after the loop\n"
            + f"{i3}tfx_mma_rs_half<0, {elem}>(C_f, tf_ra[tf_u], {mm['b']});\n"
            + f"{i3}if (tf_i == {nkt}) {{\n{i3}  tf::wgmma_wait<1>();  // k-tile i - 1 done: its stage and slot are free\n"
            + mm["rel"].replace(i2, i3 + "  ", 1) + f"{i3}}}\n{i2}}}\n"
            + f"{i2}if (tf_i <= {nkt}) {{\n" + mm["load"] + f"{i2}}}\n")
    new = f"{ind}for (int tf_u = 0; tf_u < 4; ++tf_u) {{\n" + body + f"{ind}}}\n{oind}}}\n"
    new += f"{oind}#pragma unroll\n{oind}for (int tf_tt = 0; tf_tt < {T}; ++tf_tt) {{\n"
    new += f"{oind}  const int tf_i = {nkt} + tf_tt;\n" + mm["stage"].replace(i2, oind + "  ", 1)
    new += f"{oind}  tfx_mma_rs_half<1, {elem}>(C_f, tf_ra[tf_i % 4], {mm['b']});\n{oind}}}\n"
    new += f"{oind}tf::wgmma_wait<{T}>();  // [tail] half 0 done (half 1's tail may still run)\n"
    new += f"{oind}tfx_pin<0, 64>(C_f);\n"
    if persistent:
        new += f"{oind}const int tf_tail_git = tf_git;\n"
    text = text[:mm.start()] + new + text[mm.end():]
    load = mm["load"]

    def mid(eind):
        out = f"{eind}tf::wgmma_wait<0>();  // [tail] half 1 done\n{eind}tfx_pin<64, 128>(C_f);\n"
        if persistent:
            for k in range(nkt, nk):
                out += f"{eind}tf::mbar_arrive(&tf_empty[(tf_tail_git + {k}) % {mm['s']}]);\n"
            for i in range(nkt + 1, nk):  # the deferred loads (the next tile's k-tiles)
                out += f"{eind}{{  // [tail] k-tile {i}'s deferred load\n{eind}  const int tf_i = {i}, tf_u = {i % 4};\n"
                out += load + f"{eind}}}\n"
        return out
    text = split_epilogue(text, mm.start(), mid)
    open(dst, "w").write(text)
    print(f"{dst}: register_a, tail of {T} k-tiles of {nk}, {'persistent' if persistent else 'one tile a block'}")
    sys.exit(0)

# The consumer's main loop and the wait after it.
loop = re.compile(
    r"(?P<ind>[ ]*)for \(int (?P<it>tf_it\d+) = 0; (?P=it) < (?P<nk>\d+); \+\+(?P=it)\) \{\n"
    r"(?P<stage>[ ]*const int tf_stage = [^\n]*\n)"
    r"(?P<wait>[ ]*tf::mbar_wait\(&tf_full\[tf_stage\][^\n]*\n)"
    r"(?P<fence>[ ]*tf::fence_async_proxy\(\);[^\n]*\n)?"
    r"[ ]*C_f\.mma_async\((?P<a>A_s[^,]*), (?P<b>B_s[^;]*)\);\n"
    r"(?P<rest>[ ]*C_f\.wait_prior\(\);[^\n]*\n[ ]*if \((?P=it) > 0\) tf::mbar_arrive\([^\n]*\n)"
    r"[ ]*\}\n"
    r"[ ]*C_f\.wait\(\);\n"
    r"(?P<last>[ ]*if \(\d+ > 0\) tf::mbar_arrive\(&tf_empty\[\(tf_git \+ \d+ - 1\) % (?P<s>\d+)\]\);\n)?")
ms = list(loop.finditer(text))
assert len(ms) == 1, f"tail: {len(ms)} consumer loops found"
mm = ms[0]
ind, it, nk = mm["ind"], mm["it"], int(mm["nk"])
assert 1 <= T < nk, "tail: 1 <= T < the k-tiles a tile"
persistent = mm["last"] is not None
i2 = ind + "  "
new = (f"{ind}for (int {it} = 0; {it} < {nk - T}; ++{it}) {{\n" + mm["stage"] + mm["wait"] + (mm["fence"] or "")
       + f"{i2}C_f.mma_async({mm['a']}, {mm['b']});\n" + mm["rest"] + f"{ind}}}\n")
new += f"{ind}// [tail] the last {T} k-tiles: N half 0 of each, then N half 1 of each\n"
for h in (0, 1):
    new += f"{ind}#pragma unroll\n{ind}for (int tf_tt = 0; tf_tt < {T}; ++tf_tt) {{\n"
    new += f"{i2}const int {it} = {nk - T} + tf_tt;\n" + mm["stage"]
    if h == 0:
        new += mm["wait"] + (mm["fence"] or "")
    new += f"{i2}tfx_mma_half<{h}>(C_f, {mm['a']}, {mm['b']});\n{ind}}}\n"
new += f"{ind}tf::wgmma_wait<{T}>();  // [tail] half 0 done (half 1's tail may still run)\n"
new += f"{ind}tfx_pin<0, 64>(C_f);\n"
if persistent:
    S = mm["s"]
    new += f"{ind}const int tf_tail_git = tf_git;\n"
    new += f"{ind}tf::mbar_arrive(&tf_empty[(tf_tail_git + {nk - T - 1}) % {S}]);\n"
text = text[:mm.start()] + new + text[mm.end():]

# The epilogue's slab loop, cut after half 0's slabs (kSlabs / 2) by the wait for half 1.
def mid(eind):
    out = f"{eind}tf::wgmma_wait<0>();  // [tail] half 1 done\n{eind}tfx_pin<64, 128>(C_f);\n"
    if persistent:
        for k in range(nk - T, nk):
            out += f"{eind}tf::mbar_arrive(&tf_empty[(tf_tail_git + {k}) % {mm['s']}]);\n"
    return out
text = split_epilogue(text, mm.start(), mid)
open(dst, "w").write(text)
print(f"{dst}: tail of {T} k-tiles of {nk}, {'persistent' if persistent else 'one tile a block'}")
