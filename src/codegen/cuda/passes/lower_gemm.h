// lower_gemm: the instruction family and warp arrangement of every GEMM
// (DESIGN.md, "Passes": layout / lower_gemm).
//
// Writes a FragmentPlan on every accumulator's Allocate, the swizzle its
// MMA operands need on theirs (SharedPlan::layout), and the kernel's
// LaunchPlan (threads per block, async barriers, notes):
//  - f16/bf16 operands with f32 accumulators and BLOCK_K a multiple of 16:
//    `wgmma` on sm_90a where the tile allows it (BLOCK_K * element = 128
//    bytes, a warpgroup tile with WM a multiple of 64 and WN 64, 128 or
//    256, at most 128 accumulators a thread; two whole, distinct tiles;
//    CudaOptions::wgmma), else `mma_sync` (ldmatrix + mma.sync.m16n8k16);
//  - f32 operands under CudaOptions::allow_tf32: `mma_sync_tf32`
//    (mma.sync.m16n8k8 .tf32, PTX ISA 9.7.14.5.14);
//  - everything else `simt_fma` (one FMA per product, exact).
// The warps (attr num_warps) are arranged WARPS_M x WARPS_N with warp
// tiles that are multiples of 16x16, as square as possible; the block
// shrinks to fewer warps when the tile has fewer warp tiles (a note says
// so). A fragment no gemm writes (its K loop was empty) is a simt_fma tile.
// Operand layouts: wgmma A `swizzled` (K-major, 128-byte swizzle), B
// `mn_swizzled`; mma.sync A and B `swizzled` (TF32 B `swizzled32`).
#pragma once

#include <utility>

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel lower_gemm(const tir::Kernel& kernel, const passes::PassContext& context);

// The warp grid of an mma.sync tile: WARPS_M x WARPS_N = warps (or fewer,
// halving, when none fits) with warp tiles that are multiples of 16x16,
// the squarest first (fewest ldmatrix per mma: MT + NT/2 per k16 step);
// {0, 0} when no 16x16 warp tile fits.
std::pair<int, int> arrange_warps(int block_m, int block_n, int warps);

// The warpgroup grid of a wgmma tile: WG_M x WG_N = warps / 4 with
// warpgroup tiles WM x WN, WM a multiple of 64, WN one of 64, 128, 192, 256,
// at most 128 accumulators a thread; the smallest WM first (the widest
// WN: each wgmma reads A (64x16) and B (16xWN) from shared memory, so
// fewer m64 rows read less), {0, 0} when none fits.
std::pair<int, int> arrange_warpgroups(int block_m, int block_n, int warps);

}  // namespace tilefuse::codegen
