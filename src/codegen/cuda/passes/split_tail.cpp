#include "codegen/cuda/passes/split_tail.h"

#include <fmt/format.h>

#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "tir/functor.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

namespace {

// The loads of buffer `b` in a statement.
int loads_of(const Stmt& s, const BufferNode* b) {
  struct V : IRVisitor {
    const BufferNode* b = nullptr;
    int n = 0;
    using IRVisitor::visit;
    void visit(const LoadNode* op) override {
      n += op->buffer.get() == b;
      IRVisitor::visit(op);
    }
  } v;
  v.b = b;
  v.visit_stmt(s);
  return v.n;
}

// The loops of the kernel that carry an EpiloguePlan, in program order.
std::vector<const ForNode*> epilogue_loops(const Stmt& body) {
  struct V : IRVisitor {
    std::vector<const ForNode*> all;
    using IRVisitor::visit;
    void visit(const ForNode* op) override {
      if (std::holds_alternative<EpiloguePlan>(op->plan)) all.push_back(op);
      IRVisitor::visit(op);
    }
  } v;
  v.visit_stmt(body);
  return v.all;
}

}  // namespace

int default_split_tail(int stages, bool persistent, int register_a_ahead, int64_t k_tiles) {
  const int t = register_a_ahead > 0 ? register_a_ahead
                : persistent         ? std::max(1, stages / 2)
                                     : stages - 1;
  return static_cast<int>(
      std::max<int64_t>(0, std::min<int64_t>({t, stages - 1, k_tiles - 1})));
}

Kernel split_tail(const Kernel& kernel, const passes::PassContext& context) {
  // (on for every kernel by the option, or for one by its config: the
  // kernel attr SPLIT_TAIL = T, which the tuner searches)
  const auto attr = kernel.attrs.find("SPLIT_TAIL");
  const int64_t* asked_t =
      attr != kernel.attrs.end() ? std::get_if<int64_t>(&attr->second) : nullptr;
  const bool by_config = asked_t != nullptr && *asked_t > 0;
  if (!by_config && !context.cuda.split_tail) return kernel;
  auto skip = [&](const std::string& why) {
    if (!by_config) return kernel;  // (the option on for every kernel: kernels without it say nothing)
    Kernel out = kernel;
    out.launch.notes.push_back("no split tail: " + why);
    return out;
  };
  const LaunchPlan& lp = kernel.launch;
  const ForNode* loop = top_level_pipelined(kernel.body);
  const auto* plan0 = loop ? std::get_if<PipelinePlan>(&loop->plan) : nullptr;
  if (!plan0 || plan0->form != PipelineForm::WarpSpecialized)
    return skip("no warp-specialized main loop at the kernel's top level");
  if (lp.consumer_teams != 1 || lp.cluster_size != 1 || lp.split_k_cluster ||
      lp.stream_k_units > 0)
    return skip("ping-pong teams, a cluster or stream-K");
  const PipelinedBody body = split_pipelined_body(loop);
  const GemmNode* g = body.consumer.size() == 1 ? body.consumer[0].as<GemmNode>() : nullptr;
  if (!g || !whole_tile_gemm(g)) return skip("the loop's consumer is not one whole-tile gemm");
  const auto allocs = allocations(kernel.body);
  const AllocateNode* c_alloc =
      allocs.count(g->c.buffer.get()) ? allocs.at(g->c.buffer.get()) : nullptr;
  const FragmentPlan* fp = c_alloc ? fragment_plan(c_alloc) : nullptr;
  if (!fp || fp->family != MmaFamily::Wgmma || fp->warps_m == 0 || fp->warps_n == 0 ||
      fp->block_m / fp->warps_m != 64 || fp->block_n / fp->warps_n % 128 != 0)
    return skip("the accumulator is not a wgmma tile of 64 rows a warpgroup with N halves of 64 "
                "columns or more");
  const int64_t* trip = as_const_int(loop->extent);
  if (!trip) return skip("the main loop's trip count is not a constant");
  const int64_t t = by_config ? *asked_t
                              : default_split_tail(plan0->stages, lp.persistent,
                                                   plan0->register_a_ahead, *trip);
  if (t < 1 || t >= *trip)
    return skip(fmt::format("a tail of {} k-tiles in a loop of {}", t, *trip));
  if (t > plan0->stages - 1)
    return skip(fmt::format("a tail of {} k-tiles in a ring of {} stages (at most {}: the tail's "
                            "last stage is refilled only once the stage before the tail is "
                            "released)",
                            t, plan0->stages, plan0->stages - 1));
  if (plan0->register_a_ahead > 0 && t > plan0->register_a_ahead)
    return skip(fmt::format("a tail of {} k-tiles past register_a's lead of {}", t,
                            plan0->register_a_ahead));
  // The accumulator's one reader after the loop: a per-warp staged epilogue.
  const ForNode* epilogue = nullptr;
  for (const ForNode* e : epilogue_loops(kernel.body)) {
    if (fragment_used(e->body) != g->c.buffer.get()) continue;
    if (epilogue) return skip("more than one epilogue nest reads the accumulator");
    epilogue = e;
  }
  if (!epilogue || !std::get<EpiloguePlan>(epilogue->plan).per_warp)
    return skip("the accumulator's epilogue is not staged per warp");
  if (loads_of(kernel.body, g->c.buffer.get()) != loads_of(epilogue->body, g->c.buffer.get()))
    return skip("the accumulator is read outside its epilogue nest");

  PipelinePlan plan = *plan0;
  plan.split_tail = static_cast<int>(t);
  FragmentPlan chains = *fp;
  chains.chains = 2;
  PlanEdits edits;
  edits.loops[loop] = plan;
  edits.buffers[g->c.buffer.get()] = chains;
  Kernel out = with_plans(kernel, edits);
  out.launch.notes.push_back(fmt::format(
      "split tail: each MMA warpgroup's {} columns as two m64n{} chains; the last {} k-tiles go "
      "N half 0 first, then N half 1, and the epilogue stores half 0's slabs while half 1's "
      "tail runs on the tensor pipe",
      fp->block_n / fp->warps_n, fp->block_n / fp->warps_n / 2, t));
  return out;
}

}  // namespace tilefuse::codegen
