// producer_start: how a warp-specialized producer starts (issue 15: the
// gathered operand's producer fast enough that the MMA warpgroups never
// wait on it; here, on the first stage).
//
// Before this pass a gathered GEMM's block runs, in every thread: the index
// checks (a global load of the tile's index), the copies that stage the
// wrapped rows and their masks in shared memory (`index_rows`, `index_ok`:
// the same load again), the mbarrier set-up and a block barrier; only then
// does the producer read the staged rows, compute its hoisted row addresses
// and issue the first stages. The affine operand's tiles (TMA) wait for all
// of it, and the DRAM is idle during the index round trip.
//
// On a non-persistent kernel whose warp-specialized loop is at the top
// level, this pass:
//  1. forwards staged rows into the hoisted addresses: a shared buffer
//     written once, before the loop, by a copy of an expression of
//     read-only global memory (`index_rows[i] = wrap(index[base + i])`) and
//     read only by the loop's hoisted copies is replaced there by that
//     expression at the read's indices; the copy and the buffer go. The
//     producer then loads the index into registers itself (one global load
//     a slot, evaluated once: the addresses are hoisted) and no shared
//     memory or barrier sits between the index and the first cp.async.
//  2. when nothing before the loop then writes shared memory, sets
//     `setup_at_entry`: the mbarriers are initialized at the kernel's entry
//     and the producer branches off at once. The index checks still run in
//     the threads their nest maps to (the MMA warpgroups' first threads),
//     while the first stages land.
//  3. with a gathered hoisted copy (its setup loads memory) and affine TMA
//     copies (no row-gather boxes, no cluster), sets `affine_lead`: the
//     producer issues the affine copies of the first stages before its
//     hoisted setup, so their bytes stream while the index load is in
//     flight. As many stages as keep their DRAM bytes within what the DRAM
//     delivers during that round trip (kAffineLeadBytes, 4 MiB over the
//     first 128 blocks; tiles several blocks share count once, their other
//     reads hit L2): more would queue ahead of the first gathered stage.
//
// Legality: (1) evaluates the same pure expression where the shared buffer
// was read (its source is never written in the kernel, the copy is the
// buffer's only writer and runs before the loop in every thread, and its
// lets are in scope at the loop); (2) moves only the mbarrier
// initialization, which reads nothing the statements before the loop
// write; (3) fills the same stages with the same bytes, earlier: a stage's
// `full` mbarrier completes when its arrivals and bytes are all in, in any
// order (PTX ISA 9.7.13.15, mbarrier phase completion).
//
// Measured on the H200 (seed 128x256x64/4/8, hand-edited kernels, session
// 11): first stage 2.9-3.3 us -> 2.1-2.5 us after the block's start, the
// kernel 32.9-33.3 -> 31.6-31.7 us (cuBLASLt on the ungathered operand
// 28.9-30.0 in the same calls). Forwarding alone (no lead) was neutral.
// skinny (64x128x64/8/4/splitk3, weights of its own a block): a lead of 2
// stages 23.5 -> 22.9-23.1 us, of all 8 stages 24.6-24.9 (bench/RESULTS.md).
#pragma once

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel producer_start(const tir::Kernel& kernel, const passes::PassContext& context);

}  // namespace tilefuse::codegen
