// split_tail: a warp-specialized wgmma loop's last k-tiles issued N half by
// N half, so that half of the epilogue after it runs while the tensor pipe
// still works on the other half (PipelinePlan::split_tail, FragmentPlan::
// chains; issue 15).
//
// Our main loops run at the tensor pipe's limit (1028-1031 cycles a
// 128x256x64 k-tile against 1024; bench/RESULTS.md, session 43), and a
// block's epilogue runs with the pipe idle: 3.5-4.1 of 41 kilocycles in a
// one-wave 2048^3 kernel (the seed, gemm_f16: the last tile's epilogue is
// the kernel's critical path), 6-8 of 23 a tile in gather_heavy's
// persistent kernel. Session 41's lag of one warpgroup behind the other,
// which would have overlapped them, bought nothing. Here each MMA
// warpgroup keeps its 64 x N accumulator as two chains (N halves: two
// m64n(N/2)k16 instructions a k16 step, tf_wgmma.cuh WgmmaTile's CHAINS);
// the loop's last T k-tiles are issued as T groups of half 0, then T of
// half 1; the per-warp staged epilogue waits for all but the last T groups
// (half 0 done) and stores half 0's slabs while half 1's T half-k-tiles
// (T * 512 tensor-pipe cycles at 128x256x64) run, then waits for those and
// stores half 1's. (The main loop must issue the two chains as well: a
// m64n128 on half of a pending m64n256's accumulators makes ptxas
// serialize every wgmma of the kernel, C7511.)
//
// Applies to the kernel's top-level warp-specialized loop when:
//  - one consumer team, no cluster, no split-K cluster, no stream-K;
//  - its consumer is one whole-tile gemm into a wgmma accumulator of 64
//    rows a warpgroup and N halves of 64 columns or more;
//  - the trip count is a constant above T, and T is below the ring's
//    stages (the stage before the tail goes back to the producer only once
//    half 0 is done, and the tail's last k-tile needs the stage S k-tiles
//    before it: with T = S the two wait on each other, which hung a one-tile
//    kernel on the H100, session 44);
//  - with register_a, T <= PipelinePlan::register_a_ahead (the tail's
//    fragment loads after its first go after the final wgmma wait, into
//    slots half 1 has then read);
//  - the only reader of the accumulator after the loop is one per-warp
//    staged epilogue (EpiloguePlan::per_warp), whose slab loop the printer
//    cuts at kSlabs / 2 (slabs 0 .. kSlabs / 2 - 1 are half 0's columns).
// T: the kernel attr SPLIT_TAIL (GemmConfig::split_tail, the config suffix
// /tailT, which the tuner searches), or with CudaOptions::split_tail the
// default: register_a's lead, else half the ring in a persistent kernel
// (whose producer refills the tail's stages for the next tile only once
// half 1 is done) and the ring less one in a one-tile kernel.
#pragma once

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel split_tail(const tir::Kernel& kernel, const passes::PassContext& context);

// The default tail in k-tiles (CudaOptions::split_tail; the tuner's /tailT):
// register_a's lead where A is in fragments, else half the ring (at least
// 1) in a persistent kernel and the ring less one in a one-tile one; below
// the ring's stages and the loop's `k_tiles`. 0 where it has a single one.
int default_split_tail(int stages, bool persistent, int register_a_ahead, int64_t k_tiles);

}  // namespace tilefuse::codegen
