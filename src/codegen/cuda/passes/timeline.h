// timeline: a measuring aid. With CudaOptions::block_timeline on, the layout
// pass places the timeline's slot after the mbarriers (LaunchPlan::
// timeline_slot, tir::LaunchPlan::kTimelineSlotBytes of shared memory; this
// pass places it after every other byte where layout did not) and this pass
// notes it, so that the printer has
// each block record its start, when its first warp-specialized stage has
// landed, the ends of its first two main loops (a persistent kernel's first
// two tiles) and its end
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
