#include "codegen/cuda/passes/register_budgets.h"

#include <fmt/format.h>

#include "codegen/cuda/passes/register_a.h"
#include "codegen/cuda/passes/sync.h"
#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "tir/functor.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

Kernel register_budgets(const Kernel& kernel, const passes::PassContext& context) {
  if (!context.cuda.setmaxnreg) return kernel;
  PlanEdits edits;
  std::vector<std::string> notes;
  const std::unordered_set<const ForNode*> single = tma_only_producer_loops(kernel);
  for (const ForNode* loop : pipelined_loops(kernel.body, /*warp_specialized=*/true)) {
    PipelinePlan p = std::get<PipelinePlan>(loop->plan);
    std::string why_not;
    // (Two MMA warpgroups: one team of two, or two ping-pong teams of one.)
    const int mma_threads = p.consumer_threads * kernel.launch.consumer_teams;
    if (mma_threads != 256 || p.producer_threads != 128)
      why_not = fmt::format("a {}-thread block (budgets are set for two MMA warpgroups)",
                            mma_threads + p.producer_threads);
    for (const CopyNode* c : split_pipelined_body(loop).copies)
      if (c->plan->mechanism != CopyMechanism::Tma && !c->plan->hoisted)
        why_not = "copy " + c->dst.name() + " computes its addresses in the producer";
    if (!why_not.empty()) {
      notes.push_back("no register budgets (setmaxnreg): " + why_not);
      continue;
    }
    const bool persistent = kernel.launch.persistent;
    p.producer_registers = persistent ? kPersistentProducerRegisters : kProducerRegisters;
    p.consumer_registers = persistent ? kPersistentConsumerRegisters : kConsumerRegisters;
    if (p.register_a_ahead > 0) {
      const bool lone = single.count(loop) > 0;
      p.producer_registers = lone ? kRegisterALoneProducerRegisters : kRegisterAProducerRegisters;
      p.consumer_registers = lone ? kRegisterALoneConsumerRegisters : kRegisterAConsumerRegisters;
    }
    notes.push_back(fmt::format("register budgets (setmaxnreg): {} a producer thread, {} an MMA "
                                "thread",
                                p.producer_registers, p.consumer_registers));
    edits.loops[loop] = p;
  }
  Kernel out = with_plans(kernel, edits);
  for (std::string& n : notes) out.launch.notes.push_back(std::move(n));
  return out;
}

}  // namespace tilefuse::codegen
