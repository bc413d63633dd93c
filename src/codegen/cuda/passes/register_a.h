// register_a: the gathered A operand of a warp-specialized wgmma loop loaded
// by the MMA warps straight into their wgmma A fragments (issue 15;
// PipelinePlan::register_a_ahead, CopyMechanism::Fragment).
//
// The cp.async ring of gathered rows costs the SM's L1 path as much as the
// wgmma's reads of it (bench/RESULTS.md, sessions 16-23): 128 rows of 128
// bytes a k-tile through L1 into shared memory, then read again by each
// warpgroup's wgmma. Here each MMA thread loads the rows its own A fragment
// holds (PTX ISA 9.7.15.5.1.1: rows 16w + g and + 8 of its warpgroup's 64,
// warp w, lane 4g + c) into registers, kRegisterASlots k-tiles of 16
// registers a ring, `register_a_ahead` k-tiles ahead of its wgmma, which
// reads A from those registers (wgmma.mma_async's register-A form) and B
// from the shared ring as before. K is permuted inside each 64-wide k-tile
// (tf_wgmma.cuh, WgmmaTile): a thread's elements of a row are then two
// 16-byte chunks, one ld.global.nc.v4 each, and B's TMA copy reads its
// rows in the same order through a 5-D box over the same bytes (below).
//
// Measured on the H200 (bench/RESULTS.md, session 24, hand-written kernels
// of this form): moe_up_proj 1573 -> 1439-1458 us (1.045-1.06x cuBLASLt),
// gather_heavy 58-60 -> 57.7-58.6 us; correct against the f64 oracle.
//
// Applies to the kernel's top-level warp-specialized loop (persistent or
// not; one consumer team, no split-K cluster; a 2-block multicast cluster
// keeps B's multicast, and the MMA warps release each stage in both
// blocks) when:
//  - its consumer is one whole-tile gemm on a wgmma accumulator of 16-bit
//    operands, BLOCK_K 64, one warpgroup across N and 64 rows a warpgroup;
//  - A's copy is a hoisted 16-byte cp.async (hoist_copy_addresses) with no
//    per-iteration mask, stepping one k-tile (64 elements) an iteration,
//    whose hoisted addresses read shared memory only through buffers that
//    a copy before the loop stages from global memory (forwarded here);
//  - B's copy is an affine TMA copy (multicast or not) of an MN-major tile
//    whose map is 2-D with 64x64 boxes of 128-byte swizzle, used by no
//    other copy, over K a multiple of 64, each box's K coordinate proved a
//    multiple of 32 (the permutation is relative to it);
//  - the trip count is a constant multiple of kRegisterASlots.
// Then A's copy becomes `fragment` (its hoisted addresses forwarded to
// global memory), B's map becomes [N, 2, 4, 4, K / 32] with byte strides
// [row, 8 row, 2 row, 32 row] and boxes [64, 2, 4, 4, 2] (memory row 32u +
// 8c + 2(h + 2v) + q lands at tile row 32u + 16v + 8h + 2c + q: the
// fragments' order), each box at (n, 0, 0, 0, k / 32), and the loop's plan
// says register_a=3. The prologue's index checks of A's rows (a parallel
// loop over them of lets, guards and checks, reading only staged inputs)
// become the fragment copy's row checks (CopyPlan::row_checks), which each
// MMA thread runs for its rows; the staged buffers nothing reads any more
// (the index tile, its rows and masks) go with their staging copies. The
// producer then issues only B: in a persistent kernel it has no index
// prologue and no named barriers left. (A_s gets no shared memory: layout.)
//
// CudaOptions::register_a turns it on (with CudaOptions::setmaxnreg, whose
// budgets it needs). CudaOptions::fragment_no_allocate gives the fragment
// copy's loads .L1::no_allocate (CopyPlan::no_allocate): off until measured
// (bench/RESULTS.md, session 28; .devcarry/s29/call1.sh by kernel override).
// CudaOptions::fragment_l2_prefetch, or the kernel attr
// FRAGMENT_L2_PREFETCH = 256 (GemmConfig::register_a_l2_prefetch, the
// config suffix /ra256), gives them .L2::256B (CopyPlan::l2_prefetch).
#pragma once

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel register_a(const tir::Kernel& kernel, const passes::PassContext& context);

// k-tiles of A fragment loads in flight (at most kRegisterASlots - 1: one
// fragment is read by the wgmma group still in flight). Measured: 2 took
// 63 us on gather_heavy, 3 took 58 (session 24).
inline constexpr int kRegisterAAhead = 3;
// setmaxnreg budgets of this form: the producer issues TMA only; the MMA
// warps hold 128 accumulators and 64 fragment registers
// (40 * 128 + 232 * 256 = 168 * 384).
inline constexpr int kRegisterAProducerRegisters = 40;
inline constexpr int kRegisterAConsumerRegisters = 232;
// ... where the producer issues B's TMA boxes and nothing else (the index
// checks absorbed, no index prologue): 24 + 240 (24 * 128 + 240 * 256 <=
// 65536). At 40 / 232 ptxas spilled 12-20 bytes in gather_heavy and
// moe_up_proj at 128x256x64/4/8/persistent (session 25); at 24 / 240,
// none.
inline constexpr int kRegisterALoneProducerRegisters = 24;
inline constexpr int kRegisterALoneConsumerRegisters = 240;

}  // namespace tilefuse::codegen
