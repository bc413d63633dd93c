// row_prefetch: a persistent register_a kernel's producer warpgroup asks L2
// for the next tile's gathered rows a tile before the MMA warps load them
// (issue 15; CopyPlan::row_prefetch_bytes, whose comment says how the
// printer issues it).
//
// register_a's MMA warps load A's rows straight from global memory, three
// k-tiles ahead of their wgmma, and ptxas issues each load about 1.5
// k-steps before its use (bench/RESULTS.md, sessions 32-33): a row that
// misses L2 stalls the MMA warps. In the steady state most rows hit (the
// four blocks of a grouped tile column read the same rows), but every
// block's first tiles start together, cold (the block timeline, session
// 39: gather_heavy's excess over the plain kernel is in its first two
// tiles). The producer issues only B's TMA boxes, so it has the issue slots
// to prefetch: once a tile, one cp.async.bulk.prefetch.L2 of a whole row a
// thread, for the next tile (not session 35's per-k-tile prefetch, whose
// instructions and barriers cost more than the misses they hid).
//
// Applies to the top-level warp-specialized loop of a persistent kernel
// (round-robin tiles: no stream-K, one consumer team) with a fragment copy
// (register_a) when:
//  - the copy's row addresses read exactly one global load (the index:
//    fragment_row_load) of 4- or 8-byte integers that reads neither the
//    copy's column var nor the loop's var;
//  - axis_info proves that load's address contiguous along the row var over
//    the copy's rows and 16-byte aligned at the first row, and the rows'
//    entries are a multiple of 16 bytes (cp.async.bulk's rules, PTX ISA
//    9.7.9.25.4.1);
//  - the loop's trip count is a constant (register_a's is).
// The producer then prefetches after issuing iteration
// min(stages, trip count - 1) of each tile: by then its first stages are
// issued, and the index copy issued at the tile's start has landed.
//
// CudaOptions::next_tile_row_prefetch turns it on (off until measured).
#pragma once

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel row_prefetch(const tir::Kernel& kernel, const passes::PassContext& context);

}  // namespace tilefuse::codegen
