// warp_specialize: which pipelined loop a producer warpgroup feeds
// (docs/architecture.md; CUTLASS's sm90 warp-specialized kernels are the
// public reference for the structure).
//
// The kernel's wgmma main loop (a pipelined loop whose consumer is one
// whole-tile wgmma gemm over tiles its own copies fill) becomes
// `warp_specialized` (PipelinePlan): a producer warpgroup of 128 threads,
// after the MMA warpgroups, issues each stage's copies and signals the
// stage's `full` mbarrier; the MMA warpgroups (the consumers) wait on it,
// run the stage's wgmma and release the stage through its `empty`
// mbarrier. LaunchPlan::num_threads grows by the producer, and
// consumer_threads records the MMA warpgroups (after the loop only they
// run); register_budgets may then give the roles register budgets. Not
// applied, with a note saying why, when:
//  - a copy of the loop would be register-staged (lower_copies would not
//    issue it as cp.async or TMA): held to the registers of a 384-thread
//    block, such a producer spilled 400-3000 bytes (a conversion, dequant
//    or transposed gather), where the same copies spread over all warps do
//    not;
//  - the loop has more than two MMA warpgroups (with the producer a
//    640-thread block has 96 registers a thread, too few for the tile);
//  - the loop is not at the kernel's top level (inside another loop or a
//    branch: the producer/consumer split and the mbarrier phases assume one
//    pass over the loop per block);
//  - CudaOptions::warp_specialize is off.
// Runs after lower_gemm (it needs the wgmma tiles) and before lower_copies
// (which issues TMA only in a warp-specialized producer).
#pragma once

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel warp_specialize(const tir::Kernel& kernel, const passes::PassContext& context);

// The producer warpgroup's size.
inline constexpr int kProducerThreads = 128;

}  // namespace tilefuse::codegen
