// layout: where every shared buffer lives (DESIGN.md, "Passes": layout).
//
// Writes each shared buffer's SharedPlan (its layout, from lower_gemm for
// MMA operands and row-major otherwise; its ring depth, the stages of the
// pipelined loop whose copies fill it, 1 for an in-order loop; its byte
// offset), the mbarriers of a warp-specialized loop (2 * stages of 8 bytes,
// PipelinePlan::mbarrier_offset), and LaunchPlan::dynamic_shared_bytes and
// shared_align. Buffers go in allocation order, each 128-byte aligned;
// wgmma operands and TMA boxes with the 128-byte swizzle 1024-byte aligned
// (the swizzle is a function of address bits [4, 10): PTX ISA 9.7.15.5.1,
// and every stage of such a tile must be a multiple of 1024 bytes; an
// InternalError otherwise). The dynamic shared memory base is then 1024-byte
// aligned when the kernel has a wgmma tile, else 128.
#pragma once

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel layout(const tir::Kernel& kernel, const passes::PassContext& context);

}  // namespace tilefuse::codegen
