// Equality and hashing both reduce a tree to one canonical token stream (a
// pre-order walk where each bound var/buffer becomes its binding index and
// each free one its address), so the two can never disagree.
#include "tir/structural.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include <xxhash.h>

#include "tir/functor.h"

namespace tilefuse::tir {

namespace {

enum Tag : uint64_t {
  kTagExpr = 1,
  kTagStmt,
  kTagBoundVar,
  kTagFreeVar,
  kTagBoundBuffer,
  kTagFreeBuffer,
  kTagAbsent,
  kTagBufferDecl,
  kTagString,
  kTagAttr,
};

class Serializer final : public IRVisitor {
 public:
  std::vector<uint64_t> out;

  void expr(const Expr& e) {
    if (!e.defined()) {
      out.push_back(kTagAbsent);
      return;
    }
    out.push_back(kTagExpr);
    out.push_back(static_cast<uint64_t>(e.kind()));
    out.push_back(static_cast<uint64_t>(e.dtype()));
    visit_expr(e);
  }
  void stmt(const Stmt& s) {
    if (!s.defined()) {
      out.push_back(kTagAbsent);
      return;
    }
    out.push_back(kTagStmt);
    out.push_back(static_cast<uint64_t>(s.kind()));
    visit_stmt(s);
  }
  void exprs(const std::vector<Expr>& es) {
    out.push_back(es.size());
    for (const Expr& e : es) expr(e);
  }
  void str(const std::string& s) {
    out.push_back(kTagString);
    out.push_back(s.size());
    for (size_t i = 0; i < s.size(); i += 8) {
      uint64_t w = 0;
      std::memcpy(&w, s.data() + i, std::min<size_t>(8, s.size() - i));
      out.push_back(w);
    }
  }
  void attrs(const Attrs& a) {
    out.push_back(kTagAttr);
    out.push_back(a.size());
    for (const auto& [key, value] : a) {
      str(key);
      out.push_back(value.index());
      if (const auto* i = std::get_if<int64_t>(&value)) out.push_back(static_cast<uint64_t>(*i));
      if (const auto* d = std::get_if<double>(&value)) out.push_back(std::bit_cast<uint64_t>(*d));
      if (const auto* s = std::get_if<std::string>(&value)) str(*s);
    }
  }
  // The kernel plan (tir/plan.h): every field, expressions structurally.
  void ints(std::initializer_list<int64_t> v) {
    for (int64_t x : v) out.push_back(static_cast<uint64_t>(x));
  }
  void copy_plan(const std::optional<CopyPlan>& p) {
    out.push_back(p.has_value());
    if (!p) return;
    ints({static_cast<int64_t>(p->mechanism), p->width, p->register_slots, p->tensor_map,
          p->tma_bytes, p->row_gather, p->rows, p->row_pitch});
    expr(p->vector_load);
    expr(p->row_mask);
    ints({p->cache_all, p->hoisted, p->step, p->multicast, p->next_tile, p->cache_by_repeats,
          p->no_allocate, p->l2_prefetch, p->word_loads});
    exprs(p->hoisted_indices);
    expr(p->hoisted_mask);
    expr(p->iteration_mask);
    out.push_back(p->row_checks.size());
    for (const Stmt& c : p->row_checks) stmt(c);
    str(p->reason);
    out.push_back(p->boxes.size());
    for (const TmaBox& b : p->boxes) {
      exprs(b.coords);
      ints({b.smem_offset});
    }
  }
  void loop_plan(const LoopPlan& p) {
    out.push_back(p.index());
    if (const auto* q = std::get_if<PipelinePlan>(&p)) {
      ints({static_cast<int64_t>(q->form), q->stages, q->issue_ahead, q->wgmma_in_flight,
            q->producer_threads, q->consumer_threads, q->mbarrier_offset, q->producer_registers,
            q->consumer_registers, q->setup_at_entry, q->affine_lead, q->barrier_after,
            q->single_issuer, q->consumer_fence, q->register_a_ahead, q->split_tail});
      str(q->why);
    } else if (const auto* e = std::get_if<EpiloguePlan>(&p)) {
      ints({static_cast<int64_t>(e->form), e->pitch, e->stmatrix, e->offset, e->contiguous_chunks,
            e->chunk_mask_varies, e->pair_cast, e->team_stride, e->tma_store, e->per_warp,
            e->slab_buffers});
      str(e->why);
    }
  }
  void buffer_plan(const BufferPlan& p) {
    out.push_back(p.index());
    if (const auto* q = std::get_if<SharedPlan>(&p)) {
      ints({static_cast<int64_t>(q->layout), q->stages, q->offset, q->bytes});
    } else if (const auto* f = std::get_if<FragmentPlan>(&p)) {
      ints({static_cast<int64_t>(f->family), static_cast<int64_t>(f->operand), f->block_m,
            f->block_n, f->block_k, f->warps_m, f->warps_n, f->threads, f->chains});
    }
  }
  void launch_plan(const LaunchPlan& l) {
    ints({l.defined, l.num_threads, l.consumer_threads, l.dynamic_shared_bytes, l.shared_align,
          l.async_barriers, l.persistent, l.cluster_size, l.workspace_fragment_order,
          l.consumer_teams, l.timeline_slot, l.split_k_cluster, l.workspace_vector,
          l.ring_fold_at});
    out.push_back(l.tensor_maps.size());
    for (const TensorMapPlan& m : l.tensor_maps) {
      ints({m.param, m.elem_bytes, m.swizzle_bytes});
      out.push_back(m.dims.size());
      for (int64_t d : m.dims) out.push_back(static_cast<uint64_t>(d));
      out.push_back(m.strides.size());
      for (int64_t d : m.strides) out.push_back(static_cast<uint64_t>(d));
      out.push_back(m.box.size());
      for (int d : m.box) out.push_back(static_cast<uint64_t>(d));
    }
    out.push_back(l.notes.size());
    for (const std::string& n : l.notes) str(n);
  }
  void bind(const Var& v) {
    out.push_back(static_cast<uint64_t>(v.dtype()));
    vars_[v.get()] = next_binding_++;
  }
  void declare(const Buffer& b) {
    out.push_back(kTagBufferDecl);
    out.push_back(static_cast<uint64_t>(b.dtype()));
    out.push_back(static_cast<uint64_t>(b.scope()));
    out.push_back(b->read_only);
    out.push_back(static_cast<uint64_t>(b->alignment));
    exprs(b->shape);
    exprs(b->strides);
    buffers_[b.get()] = next_binding_++;
  }
  void buffer(const Buffer& b) {
    auto it = buffers_.find(b.get());
    if (it != buffers_.end()) {
      out.push_back(kTagBoundBuffer);
      out.push_back(it->second);
    } else {
      out.push_back(kTagFreeBuffer);
      out.push_back(reinterpret_cast<uintptr_t>(b.get()));
    }
  }
  void tile(const TileRef& t) {
    buffer(t.buffer);
    exprs(t.prefix);
  }

 protected:
  void visit(const IntImmNode* op) override { out.push_back(static_cast<uint64_t>(op->value)); }
  void visit(const FloatImmNode* op) override {
    // All NaNs compare equal: the text form cannot keep payloads.
    double v = std::isnan(op->value) ? std::nan("") : op->value;
    out.push_back(std::bit_cast<uint64_t>(v));
  }
  void visit(const VarNode* op) override {
    auto it = vars_.find(op);
    if (it != vars_.end()) {
      out.push_back(kTagBoundVar);
      out.push_back(it->second);
    } else {
      out.push_back(kTagFreeVar);
      out.push_back(reinterpret_cast<uintptr_t>(op));
    }
  }
#define TF_TIR_BINARY(name, ...)              \
  void visit(const name##Node* op) override { \
    expr(op->a);                              \
    expr(op->b);                              \
  }
  TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_TIR_BINARY)
#undef TF_TIR_BINARY
  void visit(const NotNode* op) override {
    expr(op->a);
  }
  void visit(const SelectNode* op) override {
    expr(op->cond);
    expr(op->true_value);
    expr(op->false_value);
  }
  void visit(const CastNode* op) override {
    expr(op->value);
  }
  void visit(const CallNode* op) override {
    out.push_back(static_cast<uint64_t>(op->op));
    exprs(op->args);
  }
  void visit(const LoadNode* op) override {
    buffer(op->buffer);
    exprs(op->indices);
    expr(op->mask);
    expr(op->other);
  }
  void visit(const HookLoadNode* op) override {
    str(op->name);
    exprs(op->indices);
    expr(op->mask);
  }

  void visit(const ForNode* op) override {
    out.push_back(static_cast<uint64_t>(op->for_kind));
    out.push_back(static_cast<uint64_t>(op->num_stages));
    expr(op->min);
    expr(op->extent);
    bind(op->var);
    loop_plan(op->plan);
    stmt(op->body);
  }
  void visit(const IfThenElseNode* op) override {
    expr(op->cond);
    stmt(op->then_case);
    stmt(op->else_case);
  }
  void visit(const LetStmtNode* op) override {
    expr(op->value);
    bind(op->var);
    stmt(op->body);
  }
  void visit(const StoreNode* op) override {
    buffer(op->buffer);
    exprs(op->indices);
    expr(op->value);
    expr(op->mask);
  }
  void visit(const HookStoreNode* op) override {
    str(op->name);
    exprs(op->indices);
    expr(op->value);
    expr(op->mask);
  }
  void visit(const CopyNode* op) override {
    exprs(op->extents);
    out.push_back(op->vars.size());
    for (const Var& v : op->vars) bind(v);
    buffer(op->dst);
    exprs(op->dst_indices);
    expr(op->value);
    copy_plan(op->plan);
  }
  void visit(const GemmNode* op) override {
    tile(op->a);
    tile(op->b);
    tile(op->c);
    out.push_back(op->trans_a);
    out.push_back(op->trans_b);
  }
  void visit(const FillNode* op) override {
    buffer(op->buffer);
    expr(op->value);
  }
  void visit(const CheckNode* op) override {
    expr(op->cond);
    out.push_back(static_cast<uint64_t>(op->code));
    str(op->message);
    exprs(op->args);
  }
  void visit(const SeqNode* op) override {
    out.push_back(op->stmts.size());
    for (const Stmt& s : op->stmts) stmt(s);
  }
  void visit(const AllocateNode* op) override {
    declare(op->buffer);
    buffer_plan(op->plan);
    stmt(op->body);
  }
  void visit(const BarrierNode* op) override {
    out.push_back(static_cast<uint64_t>(op->barrier_kind));
  }
  void visit(const LastArrivalNode* op) override {
    buffer(op->counter);
    exprs(op->indices);
    expr(op->count);
    stmt(op->body);
  }
  void visit(const EvaluateNode* op) override {
    expr(op->value);
  }

 private:
  std::unordered_map<const VarNode*, uint64_t> vars_;
  std::unordered_map<const BufferNode*, uint64_t> buffers_;
  uint64_t next_binding_ = 0;
};

std::vector<uint64_t> serialize(const Kernel& k) {
  Serializer s;
  s.str(k.name);
  s.out.push_back(k.params.size());
  for (const KernelParam& p : k.params) {
    if (p.is_buffer()) {
      s.declare(p.buffer);
    } else {
      s.bind(p.var);
    }
  }
  s.out.push_back(k.grid.size());
  for (const GridDim& g : k.grid) {
    s.expr(g.extent);
    s.bind(g.var);
  }
  s.attrs(k.attrs);
  s.launch_plan(k.launch);
  s.stmt(k.body);
  return std::move(s.out);
}

uint64_t hash_tokens(const std::vector<uint64_t>& t) {
  return XXH3_64bits(t.data(), t.size() * sizeof(uint64_t));
}

// Replaces free vars; For/Let/Copy bindings of a mapped var shadow it.
class Substituter final : public IRMutator {
 public:
  explicit Substituter(const VarMap& map) : map_(map) {}

 protected:
  using IRMutator::visit;
  Expr visit(const VarNode* op) override {
    if (shadowed_.count(op)) return op;
    auto it = map_.find(op);
    return it == map_.end() ? Expr(op) : it->second;
  }
  Stmt visit(const ForNode* op) override {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    Stmt body = scoped({op->var}, [&] { return mutate(op->body); });
    if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return op;
    return ForNode::make(op->var, std::move(min), std::move(extent), op->for_kind, op->num_stages,
                         std::move(body), op->plan);
  }
  Stmt visit(const LetStmtNode* op) override {
    // The value is outside the binding's scope.
    Expr value = mutate(op->value);
    Stmt body = scoped({op->var}, [&] { return mutate(op->body); });
    if (value.same_as(op->value) && body.same_as(op->body)) return op;
    return LetStmtNode::make(op->var, std::move(value), std::move(body));
  }
  Stmt visit(const CopyNode* op) override {
    // Extents are outside the copy's binding scope; the rest is inside.
    std::vector<Expr> extents;
    bool changed = mutate_all(op->extents, &extents);
    Stmt inner = scoped(op->vars, [&] { return IRMutator::visit(op); });
    if (!changed) return inner;
    const auto* c = inner.as<CopyNode>();
    return CopyNode::make(c->vars, std::move(extents), c->dst, c->dst_indices, c->value, c->plan);
  }

 private:
  template <class F>
  Stmt scoped(const std::vector<Var>& vars, F&& f) {
    std::vector<const VarNode*> added;
    for (const Var& v : vars) {
      if (map_.count(v.get()) && shadowed_.insert(v.get()).second) added.push_back(v.get());
    }
    Stmt result = f();
    for (const VarNode* v : added) shadowed_.erase(v);
    return result;
  }
  const VarMap& map_;
  std::unordered_set<const VarNode*> shadowed_;
};

}  // namespace

bool structural_equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  Serializer sa, sb;
  sa.expr(a);
  sb.expr(b);
  return sa.out == sb.out;
}

bool structural_equal(const Stmt& a, const Stmt& b) {
  if (a.same_as(b)) return true;
  Serializer sa, sb;
  sa.stmt(a);
  sb.stmt(b);
  return sa.out == sb.out;
}

bool structural_equal(const Kernel& a, const Kernel& b) {
  return serialize(a) == serialize(b);
}

uint64_t structural_hash(const Expr& e) {
  Serializer s;
  s.expr(e);
  return hash_tokens(s.out);
}

uint64_t structural_hash(const Stmt& st) {
  Serializer s;
  s.stmt(st);
  return hash_tokens(s.out);
}

uint64_t structural_hash(const Kernel& k) {
  return hash_tokens(serialize(k));
}

Expr substitute(const Expr& e, const VarMap& map) {
  if (map.empty()) return e;
  return Substituter(map).mutate(e);
}

Stmt substitute(const Stmt& s, const VarMap& map) {
  if (map.empty()) return s;
  return Substituter(map).mutate(s);
}

Expr substitute(const Expr& e, const Var& var, const Expr& value) {
  return substitute(e, VarMap{{var.get(), value}});
}

Stmt substitute(const Stmt& s, const Var& var, const Expr& value) {
  return substitute(s, VarMap{{var.get(), value}});
}

void conjuncts(const Expr& e, std::vector<Expr>* out) {
  if (const AndNode* op = e.as<AndNode>()) {
    conjuncts(op->a, out);
    conjuncts(op->b, out);
  } else {
    out->push_back(e);
  }
}

bool same_value(Expr a, Expr b) {
  while (const CastNode* c = a.as<CastNode>()) a = c->value;
  while (const CastNode* c = b.as<CastNode>()) b = c->value;
  const int64_t* ca = as_const_int(a);
  const int64_t* cb = as_const_int(b);
  if (ca && cb) return *ca == *cb;
  return structural_equal(a, b);
}

bool is_own_bounds_check(const Expr& term, const LoadNode* load) {
  const LTNode* lt = term.as<LTNode>();
  if (!lt) return false;
  for (size_t k = 0; k < load->indices.size() && k < load->buffer->shape.size(); ++k)
    if (same_value(lt->a, load->indices[k]) && same_value(lt->b, load->buffer->shape[k]))
      return true;
  return false;
}

std::unordered_map<const BufferNode*, const AllocateNode*> allocations(const Stmt& body) {
  struct Collect : IRVisitor {
    std::unordered_map<const BufferNode*, const AllocateNode*> out;
    using IRVisitor::visit;
    void visit(const AllocateNode* op) override {
      out[op->buffer.get()] = op;
      IRVisitor::visit(op);
    }
  } c;
  c.visit_stmt(body);
  return c.out;
}

bool has_load(const Expr& e) {
  struct Finder : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const LoadNode*) override { found = true; }
    void visit(const HookLoadNode*) override { found = true; }
  } f;
  f.visit_expr(e);
  return f.found;
}

namespace {

struct BufferMentions : IRVisitor {
  using IRVisitor::visit;
  const BufferNode* buffer = nullptr;
  bool found = false;
  void check(const Buffer& b) { found = found || b.get() == buffer; }
  void visit(const LoadNode* op) override {
    check(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const StoreNode* op) override {
    check(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const CopyNode* op) override {
    check(op->dst);
    IRVisitor::visit(op);
  }
  void visit(const FillNode* op) override {
    check(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const GemmNode* op) override {
    check(op->a.buffer), check(op->b.buffer), check(op->c.buffer);
    IRVisitor::visit(op);
  }
};

}  // namespace

bool mentions_buffer(const Stmt& s, const BufferNode* b) {
  BufferMentions m;
  m.buffer = b;
  m.visit_stmt(s);
  return m.found;
}

bool mentions_buffer(const Expr& e, const BufferNode* b) {
  BufferMentions m;
  m.buffer = b;
  m.visit_expr(e);
  return m.found;
}

bool uses_var(const Expr& e, const Var& v) {
  struct Finder : IRVisitor {
    const VarNode* var = nullptr;
    bool found = false;
    using IRVisitor::visit;
    void visit(const VarNode* x) override { found = found || x == var; }
  } f;
  f.var = v.get();
  f.visit_expr(e);
  return f.found;
}

}  // namespace tilefuse::tir
