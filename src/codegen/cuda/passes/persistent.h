// persistent: a warp-specialized kernel as a persistent one (issue 15:
// "grid = SMs x blocks per SM, a tile scheduler in the kernel ... the
// epilogue of one tile overlapping the main loop of the next").
//
// The kernel's program ids become tiles that each block takes in turn
// (tile = block, block + blocks, ...; the order of the program ids, so the
// grouped raster of the GEMM template keeps A and B rows hot in L2). The
// producer warpgroup runs every tile's index prologue and copies, the MMA
// warpgroups every tile's main loop and epilogue; the stage ring and its
// mbarriers run on across tiles, so the producer fills the next tile's
// stages while the MMA warpgroups store the last one. The statements split
// by role as structure.h's persistent_roles says (a note says why when they
// do not). LaunchPlan::persistent is set; the runtime launches min(tiles,
// SMs) blocks. CudaOptions::persistent turns it on. The roles' counts of
// the ring's iterations over the block's tiles are ints: where a block
// could run 2^30 of them (one block may take every tile; a trip count that
// is not a constant counts as unbounded) LaunchPlan::ring_fold_at is 2^30
// and a note says so (CudaOptions::ring_fold_every_tile: 1, a testing aid).
//
// Ping-pong (the kernel attr PINGPONG = 1, GemmConfig::pingpong): two
// consumer teams of the MMA warpgroups' size take the block's tiles in turn
// (team 0 the block's 1st, 3rd, ... tile), with their main loops one after
// the other (an `order` mbarrier pair) and their epilogues free to run
// during the other team's main loop: CUTLASS's sm90 "ping-pong" arrangement
// (its KernelTmaWarpSpecializedPingpong), here with our passes' plans. The
// order also keeps each `full` mbarrier's parity unambiguous: a team waits
// on a stage only once every earlier ring iteration has landed. Taken when
// the main loop's trip count is a constant (a team counts the iterations of
// the tiles it skips), the MMA warpgroups' statements touch no shared
// buffer (the staged epilogue gets a region a team) and the teams are one
// warpgroup each with register budgets to come (register_budgets: every
// main-loop copy TMA or hoisted); else a note says why.
// Sets LaunchPlan::consumer_teams = 2 and adds a team to num_threads.
#pragma once

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel make_persistent(const tir::Kernel& kernel, const passes::PassContext& context);

}  // namespace tilefuse::codegen
