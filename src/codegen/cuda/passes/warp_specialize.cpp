#include "codegen/cuda/passes/warp_specialize.h"

#include <fmt/format.h>

#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "passes/lower_copies.h"
#include "tir/functor.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

Kernel warp_specialize(const Kernel& kernel, const passes::PassContext& context) {
  TF_CHECK(kernel.launch.defined, "warp_specialize runs after lower_gemm");
  const auto allocs = allocations(kernel.body);
  Kernel out = kernel;
  LaunchPlan& launch = out.launch;
  bool nested = false;
  const ForNode* loop = top_level_pipelined(kernel.body, &nested);
  if (!loop) {
    // A wgmma main loop the split cannot take: say so rather than fall
    // back silently.
    for (const ForNode* f : pipelined_loops(kernel.body))
      if (wgmma_async_gemm(f, allocs))
        launch.notes.push_back(fmt::format(
            "wgmma main loop {} not warp-specialized: {}", f->var.name(),
            nested ? "it sits inside another loop or a branch (the producer/consumer split "
                     "runs the loop once per block, at the kernel's top level)"
                   : "the kernel has more than one pipelined loop"));
    return out;
  }
  if (!wgmma_async_gemm(loop, allocs)) return out;
  const int consumers = launch.num_threads;
  std::string no_ws;
  for (const CopyNode* c : split_pipelined_body(loop).copies)
    if (!passes::copy_can_be_async(kernel, c, context.target, context.cuda))
      no_ws = "copy " + c->dst.name() + " is register-staged (its producer would spill)";
  if (consumers > 256) no_ws = "more than two MMA warpgroups";
  if (!context.cuda.warp_specialize) no_ws = "the warp_specialize option is off";
  if (!no_ws.empty()) {
    launch.notes.push_back("wgmma main loop not warp-specialized: " + no_ws);
    return out;
  }
  PipelinePlan p;
  p.form = PipelineForm::WarpSpecialized;
  p.stages = loop->num_stages;
  p.issue_ahead = loop->num_stages;  // the producer runs a whole ring ahead
  p.wgmma_in_flight = 1;             // tile i's wgmma in flight while tile i - 1 is released
  p.producer_threads = kProducerThreads;
  p.consumer_threads = consumers;
  PlanEdits edits;
  edits.loops[loop] = p;
  out = with_plans(out, edits);
  out.launch.num_threads = consumers + kProducerThreads;
  out.launch.consumer_threads = consumers;
  out.launch.notes.push_back(fmt::format(
      "warp-specialized: warpgroup {} issues the copies (mbarrier pipeline), warpgroups 0..{} "
      "run wgmma",
      consumers / 128, consumers / 128 - 1));
  return out;
}

}  // namespace tilefuse::codegen
