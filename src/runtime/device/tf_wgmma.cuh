// tilefuse device helpers: the sm_90a GEMM tile, wgmma.mma_async with both
// operands in shared memory (PTX ISA 9.7.15 "Asynchronous Warpgroup Level
// Matrix Multiply-Accumulate"; 9.7.15.5.1 the matrix descriptor).
//
// Conventions shared with the emitter (src/codegen/cuda_emitter.cpp):
//  - A [BM][BK] is K-major with BK * sizeof(T) == 128 or 64: stored
//    `swizzled` (tf_copy.cuh), which for 128-byte rows is exactly the
//    128-byte swizzle (16-byte chunk ^ row % 8) and for 64-byte rows the
//    64-byte swizzle (16-byte chunk ^ (row / 2) % 4; both are address bits
//    [4, 7) or [4, 6) XORed with bits [7, 10) or [7, 9)); B [BK][BN] is
//    MN-major, stored `mn_swizzled` (128-byte strips whatever BK is);
//    both tiles (every stage) 1024-byte aligned, as the swizzle is applied
//    to address bits [4, 10);
//  - writes into those tiles by the generic proxy (st.shared, cp.async) are
//    made visible to wgmma (the async proxy) by `fence.proxy.async` before
//    the barrier that precedes the MMA: the emitter's barrier in a kernel
//    with a WgmmaTile is `async_barrier()`;
//  - like MmaTile, the object owns one thread's accumulators: element e is
//    at row(e), col(e) of the block tile, c[e] its value.
#pragma once

#include "tf_copy.cuh"
#include "tf_numeric.cuh"
#include "tf_wgmma_ops.cuh"

namespace tf {

// A shared-memory matrix descriptor (PTX ISA 9.7.15.5.1.2, "Matrix
// Descriptor Format"): start address, leading and stride byte offsets (all
// >> 4), base offset 0 (tiles aligned to their swizzle pattern: 1024 bytes)
// and bits 62-63 the swizzle mode: 1 the 128-byte swizzle, 2 the 64-byte
// one (SWIZZLE_BYTES 128 or 64).
template <int SWIZZLE_BYTES = 128>
__device__ __forceinline__ unsigned long long wgmma_desc(unsigned addr, unsigned lbo_bytes,
                                                         unsigned sbo_bytes) {
  static_assert(SWIZZLE_BYTES == 128 || SWIZZLE_BYTES == 64, "wgmma_desc: swizzle mode");
  constexpr unsigned kMode = SWIZZLE_BYTES == 128 ? 1u : 2u;
  // (built as two 32-bit words: the low one the address and the LBO, the
  // high one the SBO and the mode, bits 62-63 at 30-31)
  const unsigned lo = ((addr & 0x3FFFF) >> 4) | (((lbo_bytes >> 4) & 0x3FFF) << 16);
  const unsigned hi = ((sbo_bytes >> 4) & 0x3FFF) | (kMode << 30);
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

// The descriptor of the matrix `bytes` (a multiple of 16) past `desc`'s:
// its start address field plus bytes >> 4. The field holds a shared-memory
// address >> 4 in 14 bits, and shared memory ends below 256 KiB (228 KiB on
// sm_90), so an address inside it never carries into the next field: one
// 32-bit add, where wgmma_desc masks, shifts and ors anew (ptxas then folds the
// constant offsets of a k-tile's k16 steps and m64 tiles into the adds).
__device__ __forceinline__ unsigned long long wgmma_desc_advance(unsigned long long desc,
                                                                 unsigned bytes) {
  // (a 32-bit add of the low word: the field is in it, and the high word,
  // the stride byte offset and the swizzle mode, stays as it is; split and
  // joined by mov.b64, which the optimizer does not widen back into a
  // 64-bit add with carry)
  unsigned lo, hi;
  asm("mov.b64 {%0, %1}, %2;" : "=r"(lo), "=r"(hi) : "l"(desc));
  lo += bytes >> 4;
  unsigned long long out;
  asm("mov.b64 %0, {%1, %2};" : "=l"(out) : "r"(lo), "r"(hi));
  return out;
}

// wgmma.fence: orders this thread's earlier register and shared-memory
// accesses before the wgmma.mma_async that follow (PTX ISA 9.7.15.7.1).
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most N committed wgmma groups of this warpgroup are pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Generic-proxy writes to shared memory become visible to the async proxy
// (PTX ISA 9.7.13.4 membar/fence, "proxy.async").
__device__ __forceinline__ void fence_async_proxy() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// The block barrier of a kernel whose shared tiles wgmma reads.
__device__ __forceinline__ void async_barrier() {
  fence_async_proxy();
  __syncthreads();
}

// ---- The warp-specialized main loop (emitter: "warp specialization") ----
// A producer warpgroup issues the cp.async copies of each stage and signals
// a `full` mbarrier when they land; the MMA warpgroups wait on it, run the
// stage's wgmma and arrive on the stage's `empty` mbarrier once those MMAs
// are done, which the producer waits on before it refills the stage. The
// mbarrier operations: PTX ISA 9.7.13.15 ("Parallel Synchronization and
// Communication Instructions: mbarrier").

// Initializes the mbarrier at `bar` (8 bytes of shared memory) to expect
// `count` arrivals per phase.
__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count)
               : "memory");
}
// Blocks until the phase of parity `parity` (0 for the first, 1 for the
// second, ...) of the mbarrier has completed; acquire at CTA scope.
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred tf_p;\n"
      "TF_MBAR_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 tf_p, [%0], %1;\n"
      "@!tf_p bra TF_MBAR_WAIT;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}
// One arrival of this thread on the mbarrier (release at CTA scope).
__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
  asm volatile("{\n.reg .b64 tf_st;\nmbarrier.arrive.shared::cta.b64 tf_st, [%0];\n}\n" ::"r"(
                   smem_addr(bar))
               : "memory");
}
// One arrival on the mbarrier once every cp.async this thread issued so far
// has completed; .noinc: the arrival counts against the expected count
// (PTX ISA 9.7.9.25.3.3, cp.async.mbarrier.arrive).
__device__ __forceinline__ void cp_async_mbar_arrive(unsigned long long* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar))
               : "memory");
}
// One arrival that also raises the phase's expected transaction count by
// `bytes` (what the TMA copies of the phase will complete).
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile(
      "{\n.reg .b64 tf_st;\nmbarrier.arrive.expect_tx.shared::cta.b64 tf_st, [%0], %1;\n}\n" ::"r"(
          smem_addr(bar)),
      "r"(bytes)
      : "memory");
}

// A TMA tensor map (CUtensorMap: 128 opaque bytes, 64-byte aligned), taken
// by value as a `const __grid_constant__` kernel parameter.
struct alignas(64) TmaDesc {
  unsigned long long opaque[16];
};

// One TMA tile store (PTX ISA 9.7.9.25.5.2, cp.async.bulk.tensor, the
// shared::cta to global direction): the box of `map` at tensor coordinates
// (c0, c1) (innermost first, elements; elements past the tensor's bounds
// are not written) from shared memory at shared-window address `src` (laid
// out as the map's box, swizzled as the map says), in this thread's current
// bulk group. The generic-proxy writes of the box must be fenced
// (fence_async_proxy) before.
__device__ __forceinline__ void tma_store_2d(const TmaDesc* map, unsigned src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::
                   "l"(map), "r"(src), "r"(c0), "r"(c1)
               : "memory");
}
// Closes this thread's bulk group of TMA stores (cp.async.bulk.commit_group).
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// Waits until at most N of this thread's bulk groups still read their
// shared memory (cp.async.bulk.wait_group.read): it may then be rewritten.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// Waits until at most N of this thread's bulk groups are incomplete (their
// writes done).
template <int N>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

// One TMA tile load (PTX ISA 9.7.9.27, cp.async.bulk.tensor): the box of
// `map` at tensor coordinates c (innermost first, elements; out-of-bounds
// elements are zero-filled) into shared memory at `dst` (laid out as the
// map's box, swizzled as the map says), completing its bytes on `bar`.
template <int RANK>
__device__ __forceinline__ void tma_load(void* dst, const TmaDesc* map, int c0,
                                         unsigned long long* bar) {
  static_assert(RANK == 1, "tma_load: coordinates");
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
      "[%1, {%2}], [%3];\n" ::"r"(smem_addr(dst)),
      "l"(map), "r"(c0), "r"(smem_addr(bar))
      : "memory");
}
template <int RANK>
__device__ __forceinline__ void tma_load(void* dst, const TmaDesc* map, int c0, int c1,
                                         unsigned long long* bar) {
  static_assert(RANK == 2, "tma_load: coordinates");
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
      "[%1, {%2, %3}], [%4];\n" ::"r"(smem_addr(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(smem_addr(bar))
      : "memory");
}
template <int RANK>
__device__ __forceinline__ void tma_load(void* dst, const TmaDesc* map, int c0, int c1, int c2,
                                         unsigned long long* bar) {
  static_assert(RANK == 3, "tma_load: coordinates");
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
      "[%1, {%2, %3, %4}], [%5];\n" ::"r"(smem_addr(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(bar))
      : "memory");
}
template <int RANK>
__device__ __forceinline__ void tma_load(void* dst, const TmaDesc* map, int c0, int c1, int c2,
                                         int c3, unsigned long long* bar) {
  static_assert(RANK == 4, "tma_load: coordinates");
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
      "[%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(smem_addr(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_addr(bar))
      : "memory");
}
template <int RANK>
__device__ __forceinline__ void tma_load(void* dst, const TmaDesc* map, int c0, int c1, int c2,
                                         int c3, int c4, unsigned long long* bar) {
  static_assert(RANK == 5, "tma_load: coordinates");
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
      "[%1, {%2, %3, %4, %5, %6}], [%7];\n" ::"r"(smem_addr(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(smem_addr(bar))
      : "memory");
}

// Waits for every cp.async this thread issued (committed or not).
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}
// The barrier of the THREADS threads that use named barrier ID (bar.sync:
// PTX ISA 9.7.13.1): a persistent kernel's producer warpgroup (ID 2) among
// itself.
template <int ID, int THREADS>
__device__ __forceinline__ void named_barrier() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(ID), "n"(THREADS) : "memory");
}

// ---- Thread-block clusters (sm_90; PTX ISA 9.7.13.3 barrier.cluster, 9.7.9.21
// mapa, 9.7.13.15 mbarrier, 9.7.9.25.5 cp.async.bulk.tensor .multicast::cluster) ----
// A cluster of blocks on neighbouring SMs (a kernel declared
// __cluster_dims__) shares one stage of an operand: each block issues part of
// its boxes by TMA multicast, which lands in every block of the mask and
// completes the transaction count of the mbarrier at the same offset in each.
// A stage may then be refilled only once the MMA warpgroups of every block
// released it: each MMA warp signals the `empty` mbarrier of every block.

// This block's rank in its cluster (%cluster_ctarank).
__device__ __forceinline__ unsigned cluster_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// (cluster_sync: tf_status.cuh, which every kernel includes.)
// Makes this thread's mbarrier.init visible to the cluster's other blocks
// (fence.mbarrier_init: PTX ISA 9.7.13.4).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival on the mbarrier at `bar`'s offset in the shared memory of the
// cluster's block `rank`, with the default semantics (release at CTA scope,
// as CUTLASS's ClusterBarrier::arrive): it releases a stage this thread only
// read, by wgmma that has completed. A release at cluster scope fences every
// earlier access of the thread cluster-wide and measured 1.4-2.4x slower
// main loops (bench/RESULTS.md, session 7).
__device__ __forceinline__ void mbar_arrive_cluster(unsigned long long* bar, unsigned rank) {
  asm volatile(
      "{\n.reg .b32 tf_ra;\n"
      "mapa.shared::cluster.u32 tf_ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [tf_ra];\n}\n" ::"r"(
          smem_addr(bar)),
      "r"(rank)
      : "memory");
}
// One arrival of this warp on the mbarrier at `bar`'s offset in each of the
// CLUSTER blocks of the cluster, once every lane got here: lane r arrives on
// block r's (CLUSTER <= 32), a predicated mapa and arrive with no loop (with
// lane 0 arriving on every block in turn, register_a's persistent kernel
// in a cluster spilled 12 bytes; this way 4).
template <int CLUSTER>
__device__ __forceinline__ void mbar_arrive_lane_cluster(unsigned long long* bar) {
  static_assert(CLUSTER >= 1 && CLUSTER <= 32, "mbar_arrive_lane_cluster: cluster size");
  __syncwarp();
  const unsigned lane = threadIdx.x & 31;
  if (lane < CLUSTER) mbar_arrive_cluster(bar, lane);
}
// tma_load, multicast: the box lands at `dst`'s offset in every block of
// `mask` (bit r: the cluster's block r), each completing its bytes on the
// mbarrier at `bar`'s offset.
template <int RANK>
__device__ __forceinline__ void tma_load_multicast(void* dst, const TmaDesc* map, int c0, int c1,
                                                   unsigned long long* bar, unsigned short mask) {
  static_assert(RANK == 2, "tma_load_multicast: coordinates");
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(smem_addr(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(smem_addr(bar)), "h"(mask)
      : "memory");
}
template <int RANK>
__device__ __forceinline__ void tma_load_multicast(void* dst, const TmaDesc* map, int c0, int c1,
                                                   int c2, unsigned long long* bar,
                                                   unsigned short mask) {
  static_assert(RANK == 3, "tma_load_multicast: coordinates");
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(smem_addr(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(bar)), "h"(mask)
      : "memory");
}
template <int RANK>
__device__ __forceinline__ void tma_load_multicast(void* dst, const TmaDesc* map, int c0, int c1,
                                                   int c2, int c3, unsigned long long* bar,
                                                   unsigned short mask) {
  static_assert(RANK == 4, "tma_load_multicast: coordinates");
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3, %4, %5}], [%6], %7;\n" ::"r"(smem_addr(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_addr(bar)), "h"(mask)
      : "memory");
}
// (5-D: register_a's B box, K in the fragments' order, in a cluster.)
template <int RANK>
__device__ __forceinline__ void tma_load_multicast(void* dst, const TmaDesc* map, int c0, int c1,
                                                   int c2, int c3, int c4, unsigned long long* bar,
                                                   unsigned short mask) {
  static_assert(RANK == 5, "tma_load_multicast: coordinates");
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3, %4, %5, %6}], [%7], %8;\n" ::"r"(smem_addr(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(smem_addr(bar)), "h"(mask)
      : "memory");
}

// setmaxnreg (PTX ISA 9.7.17.3, sm_90a): the warpgroup's registers per
// thread become N (a multiple of 8 in 24..256); every warp of the
// warpgroup executes it. The kernel must have a register cap at entry
// (__launch_bounds__(threads, 1)). A warp-specialized kernel's producer
// gives registers back, its MMA warpgroups take them.
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

// The barrier of the MMA warpgroups alone (threads 0 .. THREADS - 1, named
// barrier 1) after the producer warpgroup has left, with the proxy fence of
// async_barrier().
template <int THREADS>
__device__ __forceinline__ void mma_barrier() {
  fence_async_proxy();
  asm volatile("bar.sync 1, %0;\n" ::"n"(THREADS) : "memory");
}
// The barrier of one consumer team of a ping-pong kernel (named barrier
// `id`: 1 and 3; 0 is the block's, 2 the producer's).
template <int THREADS>
__device__ __forceinline__ void team_barrier(int id) {
  fence_async_proxy();
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "n"(THREADS) : "memory");
}

// C[BM][BN] += A[BM][BK] @ B[BK][BN] with wgmma.mma_async m64nWNk16 over
// WG_M x WG_N warpgroups (num_warps = 4 * WG_M * WG_N): warpgroup g owns rows
// (g / WG_N) * WM .. + WM (MT = WM / 64 instructions per k16 step) and
// columns (g % WG_N) * WN .. + WN of C.
// CHAINS 2 (PipelinePlan::split_tail): each k16 step of a 64-row warpgroup
// is two m64n(WN/2)k16 instructions, one an N half (columns h * WN / 2 ..,
// accumulators c[h * kPerM / 2 ..)), so that the halves are independent
// accumulator chains; the split tail (mma_async_half) issues one half's
// k-tiles on their own, and ptxas serializes every wgmma of a kernel whose
// chains change shape (a m64n128 on half of a pending m64n256's
// accumulators: C7511, session 44).
template <class T, int BM, int BN, int BK, int WG_M, int WG_N, int CHAINS = 1>
struct WgmmaTile {
  static constexpr int WM = BM / WG_M, WN = BN / WG_N;
  static constexpr int MT = WM / 64;
  static constexpr int kPerM = WN / 2;  // accumulators per m64 tile per thread
  static constexpr int kElems = MT * kPerM;
  static constexpr int kChainN = WN / CHAINS;  // the N of one chain's instructions
  static_assert(CHAINS == 1 || (CHAINS == 2 && MT == 1 && kChainN % 64 == 0),
                "WgmmaTile: two chains take a 64-row warpgroup and N halves of 64 columns or more");
  static constexpr int kAtom = 128 / static_cast<int>(sizeof(T));
  // A's rows: one 128-byte swizzle row, or (BK 32) one 64-byte swizzle row.
  static constexpr int kRowBytes = BK * static_cast<int>(sizeof(T));
  static_assert(sizeof(T) == 2, "WgmmaTile takes 16-bit operands");
  static_assert(kRowBytes == 128 || kRowBytes == 64,
                "WgmmaTile: BK * sizeof(T) must be 128 or 64 (one swizzle row)");
  static_assert(WM % 64 == 0 && WN % 64 == 0 && WN <= 256, "WgmmaTile: tile shape");
  float c[kElems];

  // The thread's warpgroup within the tile's WG_M * WG_N (a ping-pong
  // kernel's second consumer team runs the same tile on the warpgroups
  // after the first team's).
  __device__ __forceinline__ static int wg(int tid) { return tid / 128 % (WG_M * WG_N); }

  __device__ __forceinline__ void fill(float v) {
#pragma unroll
    for (int e = 0; e < kElems; ++e) c[e] = v;
  }
  // The D fragment of m64nNk16 (PTX ISA 9.7.15.5.3, "Register Fragments",
  // wgmma D): warp w of the warpgroup holds rows 16w .. 16w + 15, laid out
  // like mma.m16n8's C once per n8 column block. e = mt * kPerM + n8 * 4 + q.
  __device__ __forceinline__ static int row(int e) {
    const int tid = threadIdx.x, lane = tid % 32;
    const int mt = e / kPerM, q = e % 4;
    return (wg(tid) / WG_N) * WM + mt * 64 + (tid / 32 % 4) * 16 + lane / 4 + (q >= 2 ? 8 : 0);
  }
  __device__ __forceinline__ static int col(int e) {
    const int tid = threadIdx.x, lane = tid % 32;
    const int j = e % kPerM;
    return (wg(tid) % WG_N) * WN + (j / 4) * 8 + (lane % 4) * 2 + (j & 1);
  }
  // The row and column this thread addresses for stmatrix.x4 of elements
  // e0 .. e0 + 7 (e0 a multiple of 8: n8 blocks 2g and 2g + 1 of m64 tile
  // mt, whose four 8x8 matrices are (2g, rows 0-7), (2g, rows 8-15),
  // (2g + 1, rows 0-7), (2g + 1, rows 8-15) in the order of the elements'
  // pairs).
  __device__ __forceinline__ static int stsm_row(int e0) {
    const int tid = threadIdx.x, lane = tid % 32;
    return (wg(tid) / WG_N) * WM + (e0 / kPerM) * 64 + (tid / 32 % 4) * 16 + lane % 8 +
           ((lane >> 3) & 1) * 8;
  }
  __device__ __forceinline__ static int stsm_col(int e0) {
    const int tid = threadIdx.x, lane = tid % 32;
    return (wg(tid) % WG_N) * WN + ((e0 % kPerM) / 8 * 2 + (lane >> 4)) * 8;
  }
  // The per-warp staged epilogue (EpiloguePlan::per_warp): the warp's
  // accumulators as kSlabs slabs of 16 rows x 64 columns, slab s holding
  // elements s * 32 .. s * 32 + 31 (m64 tile s / (WN / 64), columns
  // (s % (WN / 64)) * 64 ..), each staged in the warp's 2048-byte buffer:
  // 16 rows of 128 bytes, 16-byte chunk c of row r at r * 128 + (c ^ r % 8)
  // * 16, so that stmatrix's 8-row matrices and the copy-out's 128-byte row
  // reads each touch all 32 banks once.
  static constexpr int kSlabs = kElems / 32;
  // The first row and column of slab s in the tile.
  __device__ __forceinline__ static int slab_row(int s) {
    const int tid = threadIdx.x;
    return (wg(tid) / WG_N) * WM + (s / (WN / 64)) * 64 + (tid / 32 % 4) * 16;
  }
  __device__ __forceinline__ static int slab_col(int s) {
    return (wg(threadIdx.x) % WG_N) * WN + (s % (WN / 64)) * 64;
  }
  // The byte offset in the buffer of the row this thread addresses for
  // stmatrix.x4 of elements e0 .. e0 + 7 of a slab (e0 a multiple of 8; the
  // matrices as stsm_row / stsm_col).
  __device__ __forceinline__ static int slab_stsm_offset(int e0) {
    const int lane = threadIdx.x % 32;
    const int r = lane % 8 + ((lane >> 3) & 1) * 8, c = (e0 % 32) / 8 * 2 + (lane >> 4);
    return r * 128 + ((c ^ (r % 8)) * 16);
  }
  // The copy-out: the lane's chunk k (0..3) of a slab is row 4k + lane / 8,
  // columns (lane % 8) * 8 .. + 7 (a warp's access: 4 whole 128-byte rows).
  __device__ __forceinline__ static int slab_chunk_row(int k) { return k * 4 + threadIdx.x % 32 / 8; }
  __device__ __forceinline__ static int slab_chunk_col() { return threadIdx.x % 8 * 8; }
  __device__ __forceinline__ static int slab_chunk_offset(int k) {
    const int r = slab_chunk_row(k);
    return r * 128 + ((threadIdx.x % 8) ^ (r % 8)) * 16;
  }
  // Accumulator e, read for the epilogue (after wait(), whose operand fence
  // keeps the read after the final wgmma.wait_group).
  __device__ __forceinline__ float value(int e) const { return c[e]; }
  // Pins the accumulators: the compiler may not move their reads or writes
  // across this point (the wgmma writes them asynchronously).
  __device__ __forceinline__ void fence_operands() {
#pragma unroll
    for (int e = 0; e < kElems; ++e) asm volatile("" : "+f"(c[e])::"memory");
  }
  // This warpgroup's B: the shared address of its first 128-byte strip, and
  // the descriptor at k16 step s (16 rows, 2048 bytes, into each strip; LBO
  // the strip of BK rows of 128 bytes, SBO 8 rows).
  __device__ __forceinline__ static unsigned b_base(const T* Bs) {
    return smem_addr(Bs) + (wg(threadIdx.x) % WG_N) * (WN / kAtom) * (BK * 128);
  }
  __device__ __forceinline__ static unsigned long long b_desc(unsigned b0, int s) {
    return wgmma_desc_advance(wgmma_desc(b0, BK * 128, 1024), s * 16 * 128);
  }
  // Issues C += As @ Bs (all k16 steps) as one wgmma group, without waiting.
  __device__ __forceinline__ void mma_async(const T* As, const T* Bs) {
    const int g = wg(threadIdx.x);
    const unsigned a0 = smem_addr(As) + (g / WG_N) * WM * kRowBytes;
    const unsigned b0 = b_base(Bs);
    // A: m64 tile mt, k16 step s: 32 bytes into the swizzled rows; SBO 8
    // rows (one swizzle pattern: 1024 or 512 bytes), LBO unused (a k16 step
    // lies within one swizzle row). Each step's descriptors are the first's
    // advanced by a constant (wgmma_desc_advance).
    const unsigned long long da0 = wgmma_desc<kRowBytes>(a0, 16, 8 * kRowBytes);
    const unsigned long long db0 = wgmma_desc(b0, BK * 128, 1024);
    fence_operands();
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < BK / 16; ++s) {
      const unsigned long long db = wgmma_desc_advance(db0, s * 16 * 128);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const unsigned long long da = wgmma_desc_advance(da0, mt * 64 * kRowBytes + s * 32);
#pragma unroll
        for (int h = 0; h < CHAINS; ++h)
          WgmmaOp<T, kChainN>::run(&c[mt * kPerM + h * (kPerM / CHAINS)], da,
                                   wgmma_desc_advance(db, h * kChainBBytes));
      }
    }
    wgmma_commit();
    // (No fence_operands here: an access to the accumulators before the
    // wait makes ptxas serialize the wgmma; wait() pins them.)
  }
  // The bytes from one chain's first B strip to the next's (strips of kAtom
  // columns, BK rows of 128 bytes each).
  static constexpr int kChainBBytes = kChainN / kAtom * BK * 128;
  // The split tail (PipelinePlan::split_tail): C's N half H += As @ Bs's
  // (all k16 steps) as one wgmma group, without waiting; the other half's
  // accumulators are not touched (its group may still be in flight).
  template <int H>
  __device__ __forceinline__ void mma_async_half(const T* As, const T* Bs) {
    static_assert(CHAINS == 2 && H >= 0 && H < 2, "WgmmaTile: mma_async_half takes two chains");
    const int g = wg(threadIdx.x);
    const unsigned a0 = smem_addr(As) + (g / WG_N) * WM * kRowBytes;
    const unsigned long long da0 = wgmma_desc<kRowBytes>(a0, 16, 8 * kRowBytes);
    const unsigned long long db0 = wgmma_desc(b_base(Bs), BK * 128, 1024);
    pin<H * kChainN / 2, (H + 1) * kChainN / 2>();
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < BK / 16; ++s)
      WgmmaOp<T, kChainN>::run(&c[H * kChainN / 2], wgmma_desc_advance(da0, s * 32),
                               wgmma_desc_advance(db0, s * 16 * 128 + H * kChainBBytes));
    wgmma_commit();
  }
  // Pins accumulators LO .. HI - 1 (as fence_operands does all of them):
  // after a wgmma_wait that completed their chain, their reads stay after
  // it, while the other chain's group may still write its own.
  template <int LO, int HI>
  __device__ __forceinline__ void pin() {
#pragma unroll
    for (int e = LO; e < HI; ++e) asm volatile("" : "+f"(c[e])::"memory");
  }
  // ---- A in registers (PipelinePlan::register_a, passes/register_a.h) ----
  // The MMA warps load their own A fragments from global memory, for the
  // register-A form of wgmma (WgmmaOpRs), one k-tile of BK = 64 at a time;
  // A never enters shared memory. Thread (warp w of its warpgroup, lane
  // 4g + c) holds rows fragment_row(0) and fragment_row(1) (its D rows:
  // 16w + g and + 8 of the warpgroup's 64). Inside each k-tile K is
  // permuted (kRegAPermutation): the fragment's logical k = 16j + 8h + 2c
  // + q (k16 step j, half h, thread c, element q) reads column 32(j / 2) +
  // 8c + 4(j % 2) + 2h + q, so that a thread's elements of a row are the
  // two 16-byte chunks c and 4 + c, and B's rows must arrive in the same
  // order (the 5-D TMA view register_a gives B's map).
  __device__ __forceinline__ static int fragment_row(int half) {
    const int tid = threadIdx.x, lane = tid % 32;
    return (wg(tid) / WG_N) * WM + (tid / 32 % 4) * 16 + lane / 4 + half * 8;
  }
  // The byte offset of the thread's first chunk in a row's 128-byte k-tile.
  __device__ __forceinline__ static int fragment_chunk_bytes() { return threadIdx.x % 4 * 16; }
  // C += A @ Bs for one k-tile, A the fragment `a` (load_a_fragment), as one
  // wgmma group, without waiting (its wgmma.fence orders the thread's writes
  // of `a` and reads of the accumulators before it).
  __device__ __forceinline__ void mma_async_rs(const unsigned (&a)[16], const T* Bs) {
    static_assert(MT == 1 && BK == 64, "WgmmaTile: register A takes 64-row warpgroups, BK 64");
    const unsigned long long db0 = b_desc(b_base(Bs), 0);
    fence_operands();
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < BK / 16; ++s) {
      const unsigned long long db = wgmma_desc_advance(db0, s * 16 * 128);
      // step s = 2u + v: chunk pair u (words 4u.. of each row's 8), word pair v
      const int u = s / 2, v = s % 2;
#pragma unroll
      for (int h = 0; h < CHAINS; ++h)
        WgmmaOpRs<T, kChainN>::run(&c[h * (kPerM / CHAINS)], a[4 * u + 2 * v],
                                   a[8 + 4 * u + 2 * v], a[4 * u + 2 * v + 1],
                                   a[8 + 4 * u + 2 * v + 1],
                                   wgmma_desc_advance(db, h * kChainBBytes));
    }
    wgmma_commit();
  }
  // The split tail with A in registers: mma_async_half's, from fragment a.
  template <int H>
  __device__ __forceinline__ void mma_async_rs_half(const unsigned (&a)[16], const T* Bs) {
    static_assert(CHAINS == 2 && H >= 0 && H < 2, "WgmmaTile: mma_async_rs_half takes two chains");
    static_assert(BK == 64, "WgmmaTile: register A takes BK 64");
    const unsigned long long db0 = b_desc(b_base(Bs), 0);
    pin<H * kChainN / 2, (H + 1) * kChainN / 2>();
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < BK / 16; ++s) {
      const int u = s / 2, v = s % 2;
      WgmmaOpRs<T, kChainN>::run(&c[H * kChainN / 2], a[4 * u + 2 * v], a[8 + 4 * u + 2 * v],
                                 a[4 * u + 2 * v + 1], a[8 + 4 * u + 2 * v + 1],
                                 wgmma_desc_advance(db0, s * 16 * 128 + H * kChainBBytes));
    }
    wgmma_commit();
  }
  // Waits for all but the last wgmma group this warpgroup issued (the
  // accumulators stay unpinned: that group still writes them).
  __device__ __forceinline__ void wait_prior() { wgmma_wait<1>(); }
  // Waits for every wgmma this warpgroup issued.
  __device__ __forceinline__ void wait() {
    wgmma_wait<0>();
    fence_operands();
  }
  // C += As @ Bs, complete on return.
  __device__ __forceinline__ void mma(const T* As, const T* Bs) {
    mma_async(As, Bs);
    wait();
  }
};

// Loads one k-tile of a thread's A fragment for WgmmaTile::mma_async_rs:
// the 16-byte chunks at p0, p0 + 64 (row fragment_row(0)) and p1, p1 + 64
// (row fragment_row(1)), each p already at the row's k-tile plus
// fragment_chunk_bytes(); a row whose ok is false reads nothing and holds
// zeros. ld.global.nc (read-only for the kernel's life: the operand is
// never written by it). A warp reads 8 rows x 64 bytes an instruction and
// the other halves of those lines the next, each sector once: with
// kNoAllocate the loads carry .L1::no_allocate (PTX ISA, "ld", eviction
// priority), so they take no L1 lines; else they allocate in L1. With
// kL2Prefetch256 they carry .L2::256B (PTX ISA, "ld", .level::prefetch_size):
// a miss fetches the 256-byte pair of lines, so the row's next k-tile is in
// L2 by the time its load issues (CopyPlan::l2_prefetch).
#define TF_LOAD_A_FRAGMENT_ASM(QUAL)                                                            \
  asm volatile(                                                                                 \
      "{\n .reg .pred p, q;\n setp.ne.b32 p, %18, 0;\n setp.ne.b32 q, %19, 0;\n"                \
      " mov.b32 %0, 0; mov.b32 %1, 0; mov.b32 %2, 0; mov.b32 %3, 0;\n"                          \
      " mov.b32 %4, 0; mov.b32 %5, 0; mov.b32 %6, 0; mov.b32 %7, 0;\n"                          \
      " mov.b32 %8, 0; mov.b32 %9, 0; mov.b32 %10, 0; mov.b32 %11, 0;\n"                        \
      " mov.b32 %12, 0; mov.b32 %13, 0; mov.b32 %14, 0; mov.b32 %15, 0;\n"                      \
      " @p ld.global.nc" QUAL                                                                   \
      ".v4.u32 {%0, %1, %2, %3}, [%16];\n"                                                      \
      " @p ld.global.nc" QUAL                                                                   \
      ".v4.u32 {%4, %5, %6, %7}, [%16+64];\n"                                                   \
      " @q ld.global.nc" QUAL                                                                   \
      ".v4.u32 {%8, %9, %10, %11}, [%17];\n"                                                    \
      " @q ld.global.nc" QUAL                                                                   \
      ".v4.u32 {%12, %13, %14, %15}, [%17+64];\n"                                               \
      "}\n"                                                                                     \
      : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]), "=r"(a[4]), "=r"(a[5]), "=r"(a[6]),     \
        "=r"(a[7]), "=r"(a[8]), "=r"(a[9]), "=r"(a[10]), "=r"(a[11]), "=r"(a[12]), "=r"(a[13]), \
        "=r"(a[14]), "=r"(a[15])                                                                \
      : "l"(p0), "l"(p1), "r"(ok0 ? 1u : 0u), "r"(ok1 ? 1u : 0u)                                \
      : "memory")
template <bool kNoAllocate = false, bool kL2Prefetch256 = false>
__device__ __forceinline__ void load_a_fragment(unsigned (&a)[16], const char* p0, const char* p1,
                                                bool ok0, bool ok1) {
  if constexpr (kNoAllocate && kL2Prefetch256)
    TF_LOAD_A_FRAGMENT_ASM(".L1::no_allocate.L2::256B");
  else if constexpr (kNoAllocate)
    TF_LOAD_A_FRAGMENT_ASM(".L1::no_allocate");
  else if constexpr (kL2Prefetch256)
    TF_LOAD_A_FRAGMENT_ASM(".L2::256B");
  else
    TF_LOAD_A_FRAGMENT_ASM("");
}
#undef TF_LOAD_A_FRAGMENT_ASM

// 128 bytes of zeros in global memory: what a masked row's fragment loads
// read in load_a_fragment_words (a k-tile's two 64-byte chunks of a row).
static __device__ __align__(128) const unsigned kZeroRow[32] = {};

// load_a_fragment's k-tile as 16 32-bit loads, each straight into its
// register of a (wgmma's register-A order interleaves rows r and r + 8, so
// a 16-byte load's four words would need copies into it), with no
// predicates: a row whose ok is false reads kZeroRow. Predicated loads and
// copies made ptxas merge each load's registers into `a` a k-tile after
// the load was issued, so the MMA warps waited on the row a k-tile after
// asking for it instead of the lead's three (ncu on gather_heavy's
// persistent kernel, bench/RESULTS.md, session 46). The loads are
// ld.global, not .nc: ptxas sank .nc ones towards their wgmma (a lead of
// two k-tiles) and keeps these where they are issued. A warp's load reads 8
// rows x 16 bytes; the rest of each sector is the next loads' (L1 hits).
#define TF_LOAD_A_WORDS_ASM(QUAL)                                                               \
  asm volatile(                                                                                 \
      "{\n"                                                                                     \
      " ld.global" QUAL ".b32 %0, [%16];\n ld.global" QUAL ".b32 %1, [%16+4];\n"                   \
      " ld.global" QUAL ".b32 %2, [%16+8];\n ld.global" QUAL ".b32 %3, [%16+12];\n"                \
      " ld.global" QUAL ".b32 %4, [%16+64];\n ld.global" QUAL ".b32 %5, [%16+68];\n"               \
      " ld.global" QUAL ".b32 %6, [%16+72];\n ld.global" QUAL ".b32 %7, [%16+76];\n"               \
      " ld.global" QUAL ".b32 %8, [%17];\n ld.global" QUAL ".b32 %9, [%17+4];\n"                   \
      " ld.global" QUAL ".b32 %10, [%17+8];\n ld.global" QUAL ".b32 %11, [%17+12];\n"              \
      " ld.global" QUAL ".b32 %12, [%17+64];\n ld.global" QUAL ".b32 %13, [%17+68];\n"             \
      " ld.global" QUAL ".b32 %14, [%17+72];\n ld.global" QUAL ".b32 %15, [%17+76];\n"             \
      "}\n"                                                                                     \
      : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]), "=r"(a[4]), "=r"(a[5]), "=r"(a[6]),     \
        "=r"(a[7]), "=r"(a[8]), "=r"(a[9]), "=r"(a[10]), "=r"(a[11]), "=r"(a[12]), "=r"(a[13]), \
        "=r"(a[14]), "=r"(a[15])                                                                \
      : "l"(p0), "l"(p1)                                                                        \
      : "memory")
template <bool kNoAllocate = false, bool kL2Prefetch256 = false>
__device__ __forceinline__ void load_a_fragment_words(unsigned (&a)[16], const char* p0,
                                                      const char* p1, bool ok0, bool ok1) {
  const char* zero = reinterpret_cast<const char*>(kZeroRow);
  p0 = ok0 ? p0 : zero;
  p1 = ok1 ? p1 : zero;
  if constexpr (kNoAllocate && kL2Prefetch256)
    TF_LOAD_A_WORDS_ASM(".L1::no_allocate.L2::256B");
  else if constexpr (kNoAllocate)
    TF_LOAD_A_WORDS_ASM(".L1::no_allocate");
  else if constexpr (kL2Prefetch256)
    TF_LOAD_A_WORDS_ASM(".L2::256B");
  else
    TF_LOAD_A_WORDS_ASM("");
}
#undef TF_LOAD_A_WORDS_ASM

}  // namespace tf
