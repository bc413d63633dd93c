#include "codegen/cuda/passes/software_pipeline.h"

#include <fmt/format.h>

#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "tir/functor.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

int64_t copy_slots(const CopyNode* op, int threads) {
  int64_t total = 1;
  for (const Expr& e : op->extents) {
    const int64_t* c = as_const_int(e);
    if (!c) return 0;
    total *= *c;
  }
  int64_t vec = 1;
  if (op->plan && op->plan->vector_load.defined())
    vec = op->plan->width / dtype_size(op->plan->vector_load.dtype());
  else if (op->plan && op->plan->mechanism == CopyMechanism::CpAsync)
    vec = op->plan->width / dtype_size(op->dst.dtype());
  total /= vec;  // the thread loop runs over vectors
  return total % threads == 0 && total / threads <= 64 ? total / threads * vec : 0;
}

Kernel software_pipeline(const Kernel& kernel, const passes::PassContext& context) {
  TF_CHECK(kernel.launch.defined, "pipeline runs after lower_gemm");
  const auto allocs = allocations(kernel.body);
  const int threads = kernel.launch.num_threads;
  PlanEdits edits;
  std::vector<std::string> notes;
  for (const ForNode* loop : pipelined_loops(kernel.body)) {
    if (const auto* p = std::get_if<PipelinePlan>(&loop->plan);
        p && p->form == PipelineForm::WarpSpecialized)
      continue;
    const PipelinedBody body = split_pipelined_body(loop);
    const int stages = std::max(loop->num_stages, 1);
    PipelinePlan plan;
    plan.stages = stages;
    if (!body.regular || body.copies.empty() || stages < 2) {
      plan.form = PipelineForm::InOrder;
      plan.stages = 1;
      plan.why = body.copies.empty() ? "no copies"
                 : stages < 2        ? "one stage"
                                     : "irregular body: statements between or after the copies "
                                       "other than the gemm (e.g. an index check of a gather "
                                       "along K)";
      if (stages >= 2)
        notes.push_back(fmt::format("loop {} not software-pipelined ({}): its tiles get one stage",
                                    loop->var.name(), plan.why));
      edits.loops[loop] = plan;
      continue;
    }
    const GemmNode* async = wgmma_async_gemm(loop, allocs);
    bool split = false;
    for (const CopyNode* c : body.copies) {
      if (async || !c->plan || c->plan->mechanism != CopyMechanism::Register) continue;
      const int64_t slots = copy_slots(c, threads);
      if (slots == 0) continue;
      CopyPlan cp = *c->plan;
      cp.register_slots = static_cast<int>(slots);
      edits.copies[c] = cp;
      split = true;
    }
    if (async) {
      const bool keep_one = stages >= 4 && context.cuda.wgmma_keep_one;
      plan.form = PipelineForm::WgmmaAsync;
      plan.issue_ahead = keep_one ? stages - 2 : stages - 1;
      plan.wgmma_in_flight = keep_one ? 1 : 0;
      edits.loops[loop] = plan;
      continue;
    }
    plan.issue_ahead = stages - 1;
    plan.form = PipelineForm::Ring;
    const GemmNode* g = body.consumer.size() == 1 ? body.consumer[0].as<GemmNode>() : nullptr;
    const FragmentPlan* f = nullptr;
    if (g)
      if (auto it = allocs.find(g->c.buffer.get()); it != allocs.end())
        f = fragment_plan(it->second);
    bool a = false, b = false;
    for (const CopyNode* c : body.copies) {
      a = a || (g && c->dst.same_as(g->a.buffer));
      b = b || (g && c->dst.same_as(g->b.buffer));
    }
    if (f && f->family == MmaFamily::MmaSync && f->block_k / 16 >= 2 && !split &&
        int64_t{f->block_m} * f->block_n / threads >= 128 && whole_tile_gemm(g) && a && b &&
        context.cuda.fragment_pipeline)
      plan.form = PipelineForm::FragmentPipelined;
    edits.loops[loop] = plan;
  }
  Kernel out = with_plans(kernel, edits);
  for (std::string& n : notes) out.launch.notes.push_back(std::move(n));
  return out;
}

}  // namespace tilefuse::codegen
