#include "codegen/cuda/structure.h"

#include <functional>
#include <unordered_set>

#include "core/error.h"
#include "tir/functor.h"
#include "tir/printer.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: the backend works on the Tile IR

int64_t const_of(const Expr& e, const char* what) {
  const int64_t* c = as_const_int(e);
  TF_CHECK(c != nullptr, std::string("cuda backend: ") + what + " is not a constant: " + print(e));
  return *c;
}

int64_t const_numel(const Buffer& b) {
  int64_t n = 1;
  for (const Expr& e : b->shape) n *= const_of(e, "a buffer extent");
  return n;
}

Prefix prefix_of(const Stmt& body, const ForNode* loop) {
  Prefix p;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (p.reached || !s.defined()) return;
    if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) walk(t);
    } else if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      p.lets[l->var.get()] = substitute(l->value, p.lets);
      walk(l->body);
    } else if (const AllocateNode* a = s.as<AllocateNode>()) {
      walk(a->body);
    } else if (s.get() == loop) {
      p.reached = true;
    } else {
      p.stmts.push_back(s);
    }
  };
  walk(body);
  return p;
}

bool identity_copy(const CopyNode* c) {
  if (c->dst_indices.size() != c->vars.size()) return false;
  for (size_t d = 0; d < c->vars.size(); ++d) {
    const VarNode* v = c->dst_indices[d].as<VarNode>();
    if (v != c->vars[d].get()) return false;
  }
  return true;
}

PipelinedBody split_pipelined_body(const ForNode* loop) {
  PipelinedBody out;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) walk(t);
    } else if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      if (!out.consumer.empty()) out.regular = false;
      out.lets.emplace_back(l->var, l->value);
      walk(l->body);
    } else if (const CopyNode* c = s.as<CopyNode>()) {
      if (!out.consumer.empty() || c->dst.scope() != MemScope::Shared) out.regular = false;
      out.copies.push_back(c);
    } else if (s.defined()) {
      out.consumer.push_back(s);
    }
  };
  walk(loop->body);
  return out;
}

const ForNode* top_level_pipelined(const Stmt& body, bool* nested) {
  struct Count : IRVisitor {
    int n = 0;
    const ForNode* last = nullptr;
    using IRVisitor::visit;
    void visit(const ForNode* op) override {
      if (op->for_kind == ForKind::Pipelined) ++n, last = op;
      IRVisitor::visit(op);
    }
  } count;
  count.visit_stmt(body);
  if (nested) *nested = false;
  if (count.n != 1) return nullptr;
  std::function<const ForNode*(const Stmt&)> find = [&](const Stmt& s) -> const ForNode* {
    if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts)
        if (const ForNode* f = find(t)) return f;
    } else if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      return find(l->body);
    } else if (const AllocateNode* a = s.as<AllocateNode>()) {
      return find(a->body);
    } else if (const ForNode* f = s.as<ForNode>(); f && f->for_kind == ForKind::Pipelined) {
      return f;
    }
    return nullptr;
  };
  const ForNode* f = find(body);
  if (!f && nested) *nested = true;
  return f;
}

bool whole_tile_gemm(const GemmNode* g) {
  return g->a.prefix.empty() && g->b.prefix.empty() && g->c.prefix.empty() && !g->trans_a &&
         !g->trans_b;
}

bool has_register_a_loop(const Stmt& body) {
  for (const ForNode* f : pipelined_loops(body, /*warp_specialized=*/true))
    if (std::get<PipelinePlan>(f->plan).register_a_ahead > 0) return true;
  return false;
}

bool has_split_tail_loop(const Stmt& body) {
  for (const ForNode* f : pipelined_loops(body, /*warp_specialized=*/true))
    if (std::get<PipelinePlan>(f->plan).split_tail > 0) return true;
  return false;
}

std::vector<const ForNode*> pipelined_loops(const Stmt& body, bool warp_specialized) {
  struct Collect : IRVisitor {
    bool ws = false;
    std::vector<const ForNode*> out;
    using IRVisitor::visit;
    void visit(const ForNode* op) override {
      const auto* p = std::get_if<PipelinePlan>(&op->plan);
      if (op->for_kind == ForKind::Pipelined &&
          (!ws || (p && p->form == PipelineForm::WarpSpecialized)))
        out.push_back(op);
      IRVisitor::visit(op);
    }
  } c;
  c.ws = warp_specialized;
  c.visit_stmt(body);
  return c.out;
}

std::vector<const GemmNode*> gemms(const Stmt& body) {
  struct Collect : IRVisitor {
    std::vector<const GemmNode*> out;
    using IRVisitor::visit;
    void visit(const GemmNode* op) override { out.push_back(op); }
  } c;
  c.visit_stmt(body);
  return c.out;
}

const SharedPlan* shared_plan(const AllocateNode* a) {
  return a ? std::get_if<SharedPlan>(&a->plan) : nullptr;
}
const FragmentPlan* fragment_plan(const AllocateNode* a) {
  return a ? std::get_if<FragmentPlan>(&a->plan) : nullptr;
}

const GemmNode* wgmma_async_gemm(
    const ForNode* loop, const std::unordered_map<const BufferNode*, const AllocateNode*>& allocs) {
  if (loop->for_kind != ForKind::Pipelined || loop->num_stages < 2) return nullptr;
  const PipelinedBody body = split_pipelined_body(loop);
  if (!body.regular || body.copies.empty() || body.consumer.size() != 1) return nullptr;
  const GemmNode* g = body.consumer[0].as<GemmNode>();
  if (!g || !whole_tile_gemm(g)) return nullptr;
  auto it = allocs.find(g->c.buffer.get());
  const FragmentPlan* f = it == allocs.end() ? nullptr : fragment_plan(it->second);
  if (!f || f->family != MmaFamily::Wgmma) return nullptr;
  bool a = false, b = false;
  for (const CopyNode* c : body.copies) {
    a = a || c->dst.same_as(g->a.buffer);
    b = b || c->dst.same_as(g->b.buffer);
  }
  return a && b ? g : nullptr;
}

const BufferNode* fragment_used(const Stmt& s) {
  struct Use : IRVisitor {
    const BufferNode* fragment = nullptr;
    using IRVisitor::visit;
    void visit(const LoadNode* op) override {
      if (op->buffer.scope() == MemScope::Fragment) fragment = op->buffer.get();
      IRVisitor::visit(op);
    }
    void visit(const StoreNode* op) override {
      if (op->buffer.scope() == MemScope::Fragment) fragment = op->buffer.get();
      IRVisitor::visit(op);
    }
  } u;
  u.visit_stmt(s);
  return u.fragment;
}

namespace {

class PlanWriter final : public IRMutator {
 public:
  explicit PlanWriter(const PlanEdits& e) : e_(e) {}

 protected:
  using IRMutator::visit;
  Stmt visit(const AllocateNode* op) override {
    Stmt s = IRMutator::visit(op);
    auto it = e_.buffers.find(op->buffer.get());
    if (it == e_.buffers.end()) return s;
    const AllocateNode* a = s.as<AllocateNode>();
    return AllocateNode::make(a->buffer, a->body, it->second);
  }
  Stmt visit(const ForNode* op) override {
    Stmt s = IRMutator::visit(op);
    auto it = e_.loops.find(op);
    if (it == e_.loops.end()) return s;
    const ForNode* f = s.as<ForNode>();
    return ForNode::make(f->var, f->min, f->extent, f->for_kind, f->num_stages, f->body,
                         it->second);
  }
  Stmt visit(const CopyNode* op) override {
    Stmt s = IRMutator::visit(op);
    auto it = e_.copies.find(op);
    if (it == e_.copies.end()) return s;
    const CopyNode* c = s.as<CopyNode>();
    return CopyNode::make(c->vars, c->extents, c->dst, c->dst_indices, c->value, it->second);
  }

 private:
  const PlanEdits& e_;
};

}  // namespace

Kernel with_plans(const Kernel& k, const PlanEdits& edits) {
  if (edits.empty()) return k;
  PlanWriter w(edits);
  Kernel out = k;
  out.body = w.mutate(k.body);
  return out;
}

namespace {

bool only_checks(const Stmt& s) {
  struct V : IRVisitor {
    bool ok = true;
    using IRVisitor::visit;
    void visit(const StoreNode*) override { ok = false; }
    void visit(const CopyNode*) override { ok = false; }
    void visit(const GemmNode*) override { ok = false; }
    void visit(const FillNode*) override { ok = false; }
    void visit(const BarrierNode*) override { ok = false; }
  } v;
  v.visit_stmt(s);
  return v.ok;
}

}  // namespace

std::optional<std::vector<RoleItem>> persistent_roles(const Kernel& k, std::string* why) {
  std::vector<RoleItem> items;
  const ForNode* loop = nullptr;
  std::string fail;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (!fail.empty() || !s.defined()) return;
    if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) walk(t);
    } else if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      items.push_back({RoleItem::Kind::kLet, {}, l->var, l->value, nullptr});
      walk(l->body);
    } else if (const AllocateNode* a = s.as<AllocateNode>()) {
      if (a->buffer.scope() == MemScope::Local) fail = "a local buffer " + a->buffer.name();
      items.push_back({RoleItem::Kind::kAlloc, {}, {}, {}, a});
      walk(a->body);
    } else if (const ForNode* f = s.as<ForNode>(); f && std::get_if<PipelinePlan>(&f->plan) &&
                                                    std::get<PipelinePlan>(f->plan).form ==
                                                        PipelineForm::WarpSpecialized) {
      if (loop) fail = "two warp-specialized loops";
      loop = f;
      items.push_back({RoleItem::Kind::kLoop, s, {}, {}, nullptr});
    } else if (s.as<BarrierNode>()) {
      // (the persistent form places its own)
    } else if (loop) {
      items.push_back({RoleItem::Kind::kConsumer, s, {}, {}, nullptr});
    } else if (const FillNode* fl = s.as<FillNode>();
               fl && fl->buffer.scope() == MemScope::Fragment) {
      items.push_back({RoleItem::Kind::kConsumer, s, {}, {}, nullptr});
    } else if (only_checks(s) || s.as<CopyNode>()) {
      items.push_back({RoleItem::Kind::kProducer, s, {}, {}, nullptr});
    } else {
      fail = "a statement before the main loop that is neither an index check, a copy nor the "
             "accumulator's fill";
    }
  };
  walk(k.body);
  if (fail.empty() && !loop) fail = "no warp-specialized loop at the kernel's top level";
  if (fail.empty()) {
    // The producer's statements may write only what the loop's copies read;
    // nothing the MMA warpgroups run (or a let) may read it.
    BufferUse loop_copies;
    for (const CopyNode* c : split_pipelined_body(loop).copies) {
      loop_copies.visit_expr(c->value);
      for (const Expr& e : c->dst_indices) loop_copies.visit_expr(e);
    }
    // (A prologue statement may also stage what a later one reads: the
    // index tile of prefetch_prologue.)
    BufferUse prologue;
    for (const RoleItem& it : items)
      if (it.kind == RoleItem::Kind::kProducer) prologue.visit_stmt(it.stmt);
    std::unordered_set<const BufferNode*> produced;
    for (const BufferNode* b : prologue.writes) {
      if (b->scope != MemScope::Shared || !(loop_copies.reads.count(b) || prologue.reads.count(b)))
        fail = "the prologue writes " + b->name + ", which the main loop's copies do not read";
      produced.insert(b);
    }
    for (const RoleItem& it : items) {
      BufferUse u;
      if (it.kind == RoleItem::Kind::kConsumer) u.visit_stmt(it.stmt);
      if (it.kind == RoleItem::Kind::kLet) u.visit_expr(it.let_value);
      for (const BufferNode* b : u.reads)
        if (produced.count(b)) fail = b->name + " is read outside the producer";
    }
  }
  if (!fail.empty()) {
    if (why) *why = fail;
    return std::nullopt;
  }
  return items;
}

}  // namespace tilefuse::codegen
