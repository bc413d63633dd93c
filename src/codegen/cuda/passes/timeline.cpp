#include "codegen/cuda/passes/timeline.h"

#include "core/error.h"

namespace tilefuse::codegen {

tir::Kernel mark_timeline(const tir::Kernel& kernel, const passes::PassContext& context) {
  TF_CHECK(kernel.launch.defined, "timeline runs after lower_gemm");
  if (!context.cuda.block_timeline) return kernel;
  tir::Kernel out = kernel;
  out.launch.block_timeline = true;
  out.launch.notes.push_back(
      "block timeline: each block records its start, its first stage landed, the end of its "
      "first main loop and its end (%globaltimer) and its SM into tf_timeline (a measuring aid)");
  return out;
}

}  // namespace tilefuse::codegen
