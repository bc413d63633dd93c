#include "codegen/cuda/passes/epilogue.h"

#include <fmt/format.h>

#include <functional>
#include <unordered_set>

#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "tir/functor.h"
#include "tir/structural.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

EpilogueNest epilogue_nest(const ForNode* op, const BufferNode* frag) {
  EpilogueNest n;
  std::function<void(const Stmt&)> find = [&](const Stmt& s) {
    if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) find(t);
    } else if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      find(l->body);
    } else if (const ForNode* f = s.as<ForNode>(); f && f->for_kind == ForKind::Parallel) {
      TF_CHECK(!n.inner, "cuda backend: two inner loops in a fragment nest");
      n.inner = f;
    }
  };
  find(op->body);
  TF_CHECK(n.inner != nullptr && frag->shape.size() == 2 &&
               const_of(op->extent, "a parallel extent") ==
                   const_of(frag->shape[0], "a fragment extent") &&
               const_of(n.inner->extent, "a parallel extent") ==
                   const_of(frag->shape[1], "a fragment extent"),
           "cuda backend: a fragment is accessed by a nest that does not cover it in 2-D");
  bool one_store = true;
  std::function<void(const Stmt&)> scan = [&](const Stmt& s) {
    if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      scan(l->body);
    } else if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) scan(t);
    } else if (s.get() == n.inner) {
      scan(n.inner->body);
    } else if (const StoreNode* st = s.as<StoreNode>();
               st && !n.store && st->buffer.scope() == MemScope::Global) {
      n.store = st;
    } else if (!s.as<CheckNode>()) {
      one_store = false;
    }
  };
  scan(op->body);
  if (!one_store) n.store = nullptr;
  if (!n.store) return n;
  std::function<void(const Stmt&)> collect = [&](const Stmt& st) {
    if (const LetStmtNode* l = st.as<LetStmtNode>()) {
      n.lets.push_back(l);
      collect(l->body);
    } else if (const SeqNode* q = st.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) collect(t);
    } else if (st.get() == n.inner) {
      collect(n.inner->body);
    }
  };
  collect(op->body);
  struct Uses : IRVisitor {
    std::unordered_set<const VarNode*> vars;
    using IRVisitor::visit;
    void visit(const VarNode* v) override { vars.insert(v); }
  } u;
  for (const Expr& e : n.store->indices) u.visit_expr(e);
  if (n.store->mask.defined()) u.visit_expr(n.store->mask);
  n.address_let.assign(n.lets.size(), false);
  for (size_t i = n.lets.size(); i-- > 0;)
    if (u.vars.count(n.lets[i]->var.get())) {
      n.address_let[i] = true;
      u.visit_expr(n.lets[i]->value);
    }
  return n;
}

namespace {

// Why the nest's values and addresses keep it from being staged ("" when
// they do not): the copy-out recomputes the store's address and mask from
// the nest's lets, so those must read no memory; values that load are not
// staged either.
std::string staging_problem(const EpilogueNest& n) {
  bool reads = n.store->mask.defined() && has_load(n.store->mask);
  for (const Expr& e : n.store->indices) reads = reads || has_load(e);
  for (size_t i = 0; i < n.lets.size(); ++i)
    reads = reads || (n.address_let[i] && has_load(n.lets[i]->value));
  if (reads) return "the store's address or mask reads memory";
  for (const LetStmtNode* l : n.lets)
    if (has_load(l->value))
      return "a value of the nest loads memory (staged, such epilogues spilled)";
  return "";
}

}  // namespace

Kernel plan_epilogues(const Kernel& kernel, const passes::PassContext& context) {
  TF_CHECK(kernel.launch.defined, "epilogue runs after lower_gemm");
  const auto allocs = allocations(kernel.body);
  // The shared memory a staged tile may take: all of it below the
  // mbarriers of a warp-specialized loop.
  int64_t room = kernel.launch.dynamic_shared_bytes;
  struct Find : IRVisitor {
    std::vector<const ForNode*> nests;  // outermost parallel loops over a fragment
    int64_t mbarriers = -1;
    int consumer_registers = 0;  // of a warp-specialized loop's MMA warpgroups (0: not set)
    using IRVisitor::visit;
    void visit(const ForNode* op) override {
      if (const auto* p = std::get_if<PipelinePlan>(&op->plan);
          p && p->form == PipelineForm::WarpSpecialized) {
        mbarriers = p->mbarrier_offset;
        consumer_registers = p->consumer_registers;
      }
      if (op->for_kind == ForKind::Parallel && fragment_used(Stmt(op))) {
        nests.push_back(op);
        return;
      }
      IRVisitor::visit(op);
    }
  } find;
  find.visit_stmt(kernel.body);
  if (find.mbarriers >= 0) room = find.mbarriers;
  PlanEdits edits;
  std::vector<std::string> notes;
  for (const ForNode* op : find.nests) {
    const BufferNode* frag = fragment_used(Stmt(op));
    auto it = allocs.find(frag);
    const FragmentPlan* f = it == allocs.end() ? nullptr : fragment_plan(it->second);
    TF_CHECK(f != nullptr, "epilogue: fragment " + frag->name + " has no FragmentPlan");
    const EpilogueNest n = epilogue_nest(op, frag);
    EpiloguePlan plan;
    if (f->family == MmaFamily::SimtFma || !n.store) {
      edits.loops[op] = plan;  // per_element
      continue;
    }
    const int64_t out_bytes = dtype_size(n.store->buffer.dtype());
    const int64_t pitch = const_of(frag->shape[1], "a fragment extent") + 16 / out_bytes;
    const int64_t stage_bytes = const_of(frag->shape[0], "a fragment extent") * pitch * out_bytes;
    std::string why;
    if (!context.cuda.staged_epilogue)
      why = "the staged_epilogue option is off";
    else if (stage_bytes > room)
      why = fmt::format("its {}-byte tile exceeds the kernel's shared memory", stage_bytes);
    else
      why = staging_problem(n);
    const bool staged = why.empty() && out_bytes >= 1 && out_bytes <= 8 && 16 % out_bytes == 0;
    if (staged) {
      plan.form = EpilogueForm::Staged;
      plan.pitch = pitch;
      // A wgmma accumulator's D fragment is stmatrix's (PTX ISA 9.7.9.17):
      // 16-bit outputs stage four pairs an instruction. Measured on the H200
      // (hand-edited seed kernel): 0.5 to 1.1 us of 32, 20% fewer
      // instructions; 32-bit stores of the packed pairs gained nothing.
      // Its addressing takes registers beside the accumulators: at 128 a
      // thread within the 168 of a 384-thread block it spilled 36 bytes
      // (bmm 128x256, ptxas 13.0), so there only with a register budget.
      const int threads = kernel.launch.consumer_threads > 0 ? kernel.launch.consumer_threads
                                                             : kernel.launch.num_threads;
      const int64_t accumulators = int64_t{f->block_m} * f->block_n / threads;
      plan.stmatrix = context.cuda.stmatrix_epilogue && f->family == MmaFamily::Wgmma &&
                      out_bytes == 2 && (pitch * out_bytes) % 16 == 0 &&
                      (accumulators <= 64 || find.consumer_registers >= 200);
      notes.push_back("epilogue into " + n.store->buffer.name() + ": staged through shared memory" +
                      (plan.stmatrix ? " by stmatrix" : "") + ", stored in 16-byte row chunks");
    } else {
      plan.form = EpilogueForm::Paired;
      plan.why = why;
      notes.push_back("epilogue into " + n.store->buffer.name() +
                      ": paired stores from the accumulators, not staged: " + why);
    }
    edits.loops[op] = plan;
  }
  Kernel out = with_plans(kernel, edits);
  for (std::string& n : notes) out.launch.notes.push_back(std::move(n));
  return out;
}

}  // namespace tilefuse::codegen
