// timeline: a measuring aid. With CudaOptions::block_timeline on, places the
// timeline's slot after the kernel's shared bytes (LaunchPlan::timeline_slot,
// tir::LaunchPlan::kTimelineSlotBytes more shared memory) so that the printer has
// each block record its start, when its first warp-specialized stage has
// landed, the end of its first main loop and its end
// (%globaltimer, PTX ISA "Special Registers") and its SM (%smid) into the
// module global tf_timeline; the runtime reads one launch's records back
// (CudaProgram::block_timelines) and bench prints each kernel's phases.
// Off, it changes nothing.
#pragma once

#include "passes/pipeline.h"
#include "tir/ir.h"

namespace tilefuse::codegen {

tir::Kernel mark_timeline(const tir::Kernel& kernel, const passes::PassContext& context);

}  // namespace tilefuse::codegen
