// sync: the block barriers outside the pipelined loops' own (BarrierKind,
// tir/plan.h). The forms of PipelinePlan carry their barriers themselves
// (every form ends with one; a warp-specialized loop starts with the one
// after its mbarrier initialization); this pass places the others:
//  - around a synchronous copy into shared memory (a copy that is not one
//    of a pipelined loop's producer copies): one before it when earlier
//    code touched its tile or a loop runs it again (readers of the old
//    tile are done), and one before the first later statement that touches
//    the tile (its data is visible; right after it inside a loop or a
//    branch), so independent copies share one;
//  - before a staged epilogue (it reuses the shared memory from offset 0;
//    not a per-warp one, whose buffers are its warps' own);
//  - before a pipelined loop whose form issues its first copies before a
//    barrier of its own (ring, fragment_pipelined, wgmma_async) when
//    earlier code touched its tiles, a staged epilogue ran before it, or a
//    loop runs it again (a K loop inside a tile loop: the previous tile's
//    staged epilogue may still be reading the stages);
// then gives every barrier its kind (`consumers` after a warp-specialized
// loop, where only the MMA warpgroups run; `block_async` where the kernel
// has a wgmma tile, whose async-proxy reads must follow generic-proxy
// writes, PTX ISA 9.7.12.15; `block` otherwise) and removes the redundant
// ones: a barrier with no shared-memory access since the previous barrier
// (or since a loop form that ended with one, or since split-K's
// if_last_arrival, whose election meets the threads), and a barrier followed, with
// no shared-memory access between, by a warp-specialized loop (whose
// opening barrier orders the same accesses). A warp-specialized loop of a
// kernel that is not persistent, with no shared-memory access after it in
// the kernel, ends without its barrier (PipelinePlan::barrier_after). A
// warp-specialized loop whose ring is all affine TMA copies, in a kernel
// whose producer runs nothing else, gets one producer thread
// (PipelinePlan::single_issuer). A warp-specialized loop whose ring is all
// TMA copies (and register_a fragments) has no consumer fence
// (PipelinePlan::consumer_fence).
#pragma once

#include <unordered_set>

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel place_barriers(const tir::Kernel& kernel, const passes::PassContext& context);

// The warp-specialized loops whose producer issues TMA copies and nothing
// else: every copy of the ring is an affine TMA copy or the MMA warps' own
// (a fragment copy), and the producer runs nothing but the loop (a
// persistent kernel: no index prologue).
std::unordered_set<const tir::ForNode*> tma_only_producer_loops(const tir::Kernel& kernel);
// Those of them whose producer is one thread (what place_barriers marks
// single_issuer): all but register_a loops.
std::unordered_set<const tir::ForNode*> single_issuer_loops(const tir::Kernel& kernel);
// The warp-specialized loops whose ring only the async proxy writes: every
// copy into it is a TMA copy (affine or row-gathered) or the MMA warps' own
// fragment loads (what place_barriers marks consumer_fence = false).
std::unordered_set<const tir::ForNode*> async_proxy_ring_loops(const tir::Kernel& kernel);

}  // namespace tilefuse::codegen
