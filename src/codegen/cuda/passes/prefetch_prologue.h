// prefetch_prologue: a persistent kernel's producer reads the next tile's
// index one tile ahead (issue 12, pointcloud_gather; issue 15, "the
// producer's per-tile index prologue off the critical path").
//
// A persistent producer runs every tile's prologue (the index checks and
// the register-staged copies of the gathered rows' indices and in-range
// flags into shared memory) before that tile's copies. Each of those
// statements loads the tile's index from global memory and uses it at
// once, so each tile cost the producer one DRAM round trip (~1 us) before
// its first copy; with 62 tiles a block on pointcloud_gather the producer,
// not the memory, set the pace (ncu: the MMA warpgroups waited on `full`).
//
// The pass stages the tile's index in shared memory: when every global
// load of the prologue reads one buffer at `base + v` (v a loop or copy
// var of its statement over at most E points, `base` the same for all of
// them, the same mask and masked-off value), it adds
//   alloc <buf>_tile: shared dtype[E]
//   copy (i: E) <buf>_tile[i] = load(buf, [base + i], mask) plan(register,
//       width=<elem>, slots=S, next_tile=1)
// before the prologue and makes each of those loads read <buf>_tile[v]. The
// copy's plan says that the printer issues its loads for tile t + 1 into S
// registers a thread while tile t's copies run, and stores them to the
// shared tile at the start of tile t + 1 (CopyPlan::next_tile). The values
// are those of the loads it replaces: a masked-off element holds the same
// `other` the masked load gave.
//
// Only for LaunchPlan::persistent kernels and CudaOptions::prologue_prefetch;
// a note says why not when the prologue's loads do not fit that form.
#pragma once

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel prefetch_prologue(const tir::Kernel& kernel, const passes::PassContext& context);

}  // namespace tilefuse::codegen
