#include "codegen/cuda/passes/timeline.h"

#include "core/error.h"

namespace tilefuse::codegen {

tir::Kernel mark_timeline(const tir::Kernel& kernel, const passes::PassContext& context) {
  TF_CHECK(kernel.launch.defined, "timeline runs after lower_gemm");
  if (!context.cuda.block_timeline) return kernel;
  tir::Kernel out = kernel;
  // The layout pass placed the slot after the mbarriers; a kernel it did not
  // lay out gets it after every other shared byte (every pass that places
  // any has run), 8-byte aligned for its u64s.
  if (!kernel.launch.block_timeline()) {
    const int64_t slot = (kernel.launch.dynamic_shared_bytes + 7) / 8 * 8;
    out.launch.timeline_slot = slot;
    out.launch.dynamic_shared_bytes = slot + tir::LaunchPlan::kTimelineSlotBytes;
  }
  out.launch.notes.push_back(
      "block timeline: each block's thread 0 keeps its start, its first stage landed and the ends "
      "of its first two main loops (%globaltimer) in shared memory, then records them, its end "
      "and its SM into tf_timeline (a measuring aid: 32 bytes of shared memory, no register held "
      "across the main loop)");
  return out;
}

}  // namespace tilefuse::codegen
