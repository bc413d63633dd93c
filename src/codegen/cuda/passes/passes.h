// The CUDA backend's pass table (docs/architecture.md): after the
// target-independent passes, each pass decides one part of the kernel plan
// (tir/plan.h) and the printer (codegen/cuda_emitter.h) only prints it.
#pragma once

#include <vector>

#include "passes/pipeline.h"

namespace tilefuse::codegen {

// lower_gemm, warp_specialize, lower_copies, pipeline, hoist_copy_addresses,
// persistent, prefetch_prologue, cluster, producer_start, register_a, register_budgets,
// layout, epilogue, split_tail, split_k_cluster, sync, timeline, in that order (passes.cpp says why each
// sits where it does).
const std::vector<passes::PassEntry>& cuda_passes();

}  // namespace tilefuse::codegen
