// hoist_copy_addresses: loop-invariant code motion for the copies of a
// warp-specialized producer (issue 15: "row addresses computed once per
// tile and kept in registers").
//
// A producer thread copies the same slots of a tile every iteration (the
// fixed-trip thread loop over the copy: slot r is element r * threads +
// thread), so the part of each slot's source address that does not depend
// on the loop var is loop-invariant: for a gathered operand the gathered
// row (`index_rows[i]`, a shared-memory load) and its mask (`index_ok[i]`).
// For every cp.async copy of such a loop whose source indices, with the
// loop's lets inlined, are affine in the loop var with constant steps, and
// whose invariant part loads memory (a gathered row: an affine address
// costs a few integer ops an iteration, not worth three registers a slot)
// but no buffer the loop writes (the hoisting rule of tir/ir.h's
// "Hoisting"), the CopyPlan gets `hoisted`: the indices at
// the loop's first iteration, the invariant conjuncts of the mask, the
// conjuncts that vary (evaluated each iteration), and the step in
// elements. The printer then computes each slot's address and zero-fill
// size once, before the loop, and adds the step per iteration: one
// cp.async and one 64-bit add a slot instead of two shared loads, a
// predicate and a 64-bit address computation.
//
// Measured on the H200 (seed 128x256x64/4/8, hand-edited kernels,
// .devcarry/exp15/FINDINGS.md): 5 to 7.5 us of 42.
#pragma once

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel hoist_copy_addresses(const tir::Kernel& kernel, const passes::PassContext& context);

// At most this many hoisted slots a producer thread (three registers each:
// a 64-bit address and a size); more spilled in a 64-register producer
// (256x128 tiles: 16 slots of A, 748 bytes).
inline constexpr int64_t kMaxHoistedSlots = 8;

}  // namespace tilefuse::codegen
