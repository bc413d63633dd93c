// pipeline: how each pipelined loop that is not warp-specialized runs
// (DESIGN.md, "Passes": pipeline; the forms are tir/plan.h's
// PipelineForm).
//
//  - `in_order` (stages 1) for a loop with no copies, one stage, or a body
//    that is not lets, then copies into shared tiles, then the rest (e.g.
//    an index check of a gather along K between the copies): a note says
//    why when it asked for two or more stages.
//  - `wgmma_async` for a wgmma main loop (wgmma_async_gemm): tile i's MMAs
//    are issued, then tile i + issue_ahead's copies; with 4 or more stages
//    (CudaOptions::wgmma_keep_one) one MMA group stays in flight across the
//    barrier, so the stage being overwritten is tile i - 2's and the copies
//    run stages - 2 ahead, else stages - 1.
//  - `fragment_pipelined` for an mma.sync loop (not TF32) of one whole-tile
//    gemm with two or more k16 steps and 128 or more accumulators a thread
//    (CudaOptions::fragment_pipeline): the CUTLASS multistage main loop.
//    Measured on the H200 (seed, 2048^3 f16): 128x128x32/3/8 (64 a thread)
//    71.0 us without, 84.1 us with (162 registers: 1 block/SM instead of
//    2); 128x256x32/3/8 (128 a thread) 68.2 us with. Not for TF32: its f32
//    tiles take twice the cp.async and with two fragment sets ptxas
//    spilled 50-110 bytes at 128 accumulators.
//  - `ring` otherwise: copies issue_ahead = stages - 1 iterations ahead.
// Outside wgmma_async, register-staged copies whose tile is a whole
// number of slots per thread (at most 64) are double-buffered in
// registers (CopyPlan::register_slots): loaded before the consumer,
// stored to their stage after it; a fragment-pipelined loop then becomes
// a ring.
#pragma once

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel software_pipeline(const tir::Kernel& kernel, const passes::PassContext& context);

// Slots per thread of a copy spread over `threads` threads in a fixed-trip
// loop (elements; a vector of a vectorized copy is `width` bytes of its
// vector load, of a cp.async copy `width` bytes of its tile); 0 when the copy is not a whole number of rounds of at most
// 64 (then it cannot be split over registers).
int64_t copy_slots(const tir::CopyNode* copy, int threads);

}  // namespace tilefuse::codegen
