// register_budgets: the registers per thread of a warp-specialized loop's
// roles (setmaxnreg, PTX ISA 9.7.17.3; PipelinePlan::producer_registers,
// consumer_registers), under __launch_bounds__(threads, 1).
//
// A 384-thread block (two MMA warpgroups and the producer) starts at 168
// registers a thread (65536 / 384, rounded down to 8); the MMA warpgroups'
// accumulators want more, a producer that only issues copies fewer. Where
// every copy of the loop is TMA or a hoisted cp.async (hoist_copy_addresses:
// a few registers a slot), the producer gets 64 and the MMA warpgroups 216
// (64 * 128 + 216 * 256 <= 168 * 384). Elsewhere (a producer computing
// cp.async addresses, or other block shapes) nothing is set: such a
// producer spilled 136-660 bytes even at 64 (ptxas 13.0, the edge programs
// of tests/common/ws_programs.h with the tma option off).
// Measured on the H200 (seed 128x256x64/4/8, hand-edited kernels with 40
// and 232): 1.1 to 1.9 us of 34 faster; __launch_bounds__(384, 1) alone
// changed nothing. 40 and 48 spilled 8-124 bytes in the producer with a K
// tail's per-iteration mask, 64 none. CudaOptions::setmaxnreg turns it off.
#pragma once

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel register_budgets(const tir::Kernel& kernel, const passes::PassContext& context);

inline constexpr int kProducerRegisters = 64;
inline constexpr int kConsumerRegisters = 216;

}  // namespace tilefuse::codegen
