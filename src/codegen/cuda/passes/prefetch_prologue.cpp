#include "codegen/cuda/passes/prefetch_prologue.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "passes/simplify.h"
#include "tir/builder.h"
#include "tir/functor.h"
#include "tir/structural.h"

namespace tilefuse::codegen {

using namespace tir;  // NOLINT: a pass over the Tile IR

namespace {

// One global load of the prologue, as `buffer[base + var]`.
struct IndexLoad {
  const LoadNode* load = nullptr;
  Var var;             // the statement's loop or copy var the index steps with
  int64_t extent = 0;  // its points
  Expr base;           // the index at var = 0 (free of the statement's vars)
  Expr mask;           // the load's mask with var replaced by the tile var; undefined: none
};

// The prologue's global loads, each decomposed as base + var; "" or why not.
class Collect {
 public:
  Collect(const VarMap& lets, const Var& tile_var) : lets_(lets), tile_var_(tile_var) {}
  std::vector<IndexLoad> loads;
  std::string why;

  void stmt(const Stmt& s) {
    if (!why.empty() || !s.defined()) return;
    if (const SeqNode* q = s.as<SeqNode>()) {
      for (const Stmt& t : q->stmts) stmt(t);
    } else if (const LetStmtNode* l = s.as<LetStmtNode>()) {
      expr(l->value);
      const Expr inlined = substitute(l->value, lets_);
      lets_[l->var.get()] = inlined;
      stmt(l->body);
      lets_.erase(l->var.get());
    } else if (const ForNode* f = s.as<ForNode>()) {
      const int64_t* lo = as_const_int(f->min);
      const int64_t* n = as_const_int(f->extent);
      if (f->for_kind != ForKind::Parallel || !lo || *lo != 0 || !n) {
        why = "a prologue loop that is not parallel over a constant range from 0";
        return;
      }
      vars_.push_back({f->var, *n});
      stmt(f->body);
      vars_.pop_back();
    } else if (const CopyNode* c = s.as<CopyNode>()) {
      for (size_t d = 0; d < c->vars.size(); ++d) {
        const int64_t* n = as_const_int(c->extents[d]);
        if (!n) {
          why = "a prologue copy over a non-constant extent";
          return;
        }
        vars_.push_back({c->vars[d], *n});
      }
      expr(c->value);
      for (const Expr& e : c->dst_indices) expr(e);
      vars_.resize(vars_.size() - c->vars.size());
    } else if (const CheckNode* k = s.as<CheckNode>()) {
      expr(k->cond);
      for (const Expr& a : k->args) expr(a);
    } else {
      why = "a prologue statement other than a parallel loop, let, copy or check";
    }
  }

 private:
  void expr(const Expr& e) {
    for (const LoadNode* l : loads_in(e)) {
      if (!why.empty()) return;
      if (l->buffer.scope() != MemScope::Global) continue;
      if (l->indices.size() != 1) {
        why = "the prologue loads " + l->buffer.name() + " by more than one index";
        return;
      }
      const Expr idx = passes::simplify(substitute(l->indices[0], lets_));
      const Var* v = nullptr;
      int64_t extent = 0;
      for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
        if (uses_var(idx, it->first)) {
          if (v) {
            why = "a prologue index that varies along two vars";
            return;
          }
          v = &it->first;
          extent = it->second;
        }
      if (!v) {
        why = "a prologue load that does not step with its statement's vars";
        return;
      }
      const Expr base = passes::simplify(substitute(idx, *v, make_int(v->dtype(), 0)));
      if (!structural_equal(passes::simplify(base + Expr(*v)), idx)) {
        why = "a prologue index that is not base + var";
        return;
      }
      Expr mask;
      if (l->mask.defined())
        mask = passes::simplify(substitute(substitute(l->mask, lets_), *v, tile_var_));
      if (mask.defined() && uses_any_var(mask)) {
        why = "a prologue mask that depends on other vars";
        return;
      }
      loads.push_back({l, *v, extent, base, mask});
    }
  }
  bool uses_any_var(const Expr& e) const {
    for (const auto& [v, n] : vars_)
      if (uses_var(e, v)) return true;
    return false;
  }

  VarMap lets_;
  Var tile_var_;
  std::vector<std::pair<Var, int64_t>> vars_;  // in scope, outermost first
};

// The prologue with its staged loads reading the tile: each load of
// `replace` becomes tile[var]; a copy's vector load follows its load.
class Redirect : public IRMutator {
 public:
  Redirect(const std::vector<IndexLoad>& loads, const Buffer& tile) : tile_(tile) {
    for (const IndexLoad& l : loads) by_node_[l.load] = &l;
  }

 protected:
  using IRMutator::visit;
  Expr visit(const LoadNode* op) override {
    auto it = by_node_.find(op);
    if (it == by_node_.end()) return IRMutator::visit(op);
    return LoadNode::make(tile_, {it->second->var});
  }
  Stmt visit(const CopyNode* op) override {
    const Expr value = mutate(op->value);
    if (value.same_as(op->value)) return op;
    std::optional<CopyPlan> plan = op->plan;
    if (plan && plan->vector_load.defined()) {
      // The vector load is structurally one of the value's loads.
      Expr moved;
      for (const LoadNode* l : loads_in(op->value))
        if (structural_equal(Expr(l), plan->vector_load)) {
          moved = mutate(Expr(l));
          break;
        }
      // (a node of the new value: the verifier's rule)
      plan->vector_load = Expr();
      for (const LoadNode* l : loads_in(value))
        if (moved.defined() && structural_equal(Expr(l), moved)) {
          plan->vector_load = Expr(l);
          break;
        }
      TF_CHECK(plan->vector_load.defined(), "prefetch_prologue: the vector load of the copy into " +
                                                op->dst.name() + " is not in its value");
      plan->reason += fmt::format(" (reads {}, the prefetched index tile)", tile_.name());
    }
    return CopyNode::make(op->vars, op->extents, op->dst, op->dst_indices, value, plan);
  }

 private:
  Buffer tile_;
  std::unordered_map<const LoadNode*, const IndexLoad*> by_node_;
};

// The kernel body with `first` (the first prologue statement) and every
// statement after it in its block inside `alloc tile { copy; ... }`.
class Insert : public IRMutator {
 public:
  Insert(const StmtNode* first, Buffer tile, Stmt copy, Redirect* redirect)
      : first_(first), tile_(std::move(tile)), copy_(std::move(copy)), redirect_(redirect) {}
  bool done = false;

 protected:
  using IRMutator::visit;
  Stmt visit(const SeqNode* op) override {
    for (size_t p = 0; p < op->stmts.size(); ++p) {
      if (op->stmts[p].get() != first_) continue;
      std::vector<Stmt> head(op->stmts.begin(), op->stmts.begin() + static_cast<long>(p));
      std::vector<Stmt> tail{copy_};
      for (size_t q = p; q < op->stmts.size(); ++q) tail.push_back(redirect_->mutate(op->stmts[q]));
      head.push_back(AllocateNode::make(tile_, SeqNode::make(std::move(tail))));
      done = true;
      return SeqNode::make(std::move(head));
    }
    return IRMutator::visit(op);
  }
 public:
  Stmt mutate(const Stmt& s) override {
    if (s.get() == first_) {
      done = true;
      return AllocateNode::make(tile_, SeqNode::make({copy_, redirect_->mutate(s)}));
    }
    return IRMutator::mutate(s);
  }

 private:
  const StmtNode* first_;
  Buffer tile_;
  Stmt copy_;
  Redirect* redirect_;
};

}  // namespace

Kernel prefetch_prologue(const Kernel& kernel, const passes::PassContext& context) {
  if (!kernel.launch.persistent || !context.cuda.prologue_prefetch) return kernel;
  std::string why;
  const std::optional<std::vector<RoleItem>> roles = persistent_roles(kernel, &why);
  TF_CHECK(roles.has_value(), "prefetch_prologue: a persistent kernel that does not split: " + why);
  int producer_threads = 0;
  for (const RoleItem& it : *roles)
    if (it.kind == RoleItem::Kind::kLoop)
      producer_threads = std::get<PipelinePlan>(it.stmt.as<ForNode>()->plan).producer_threads;
  // The lets bound after the first prologue statement are inlined (the
  // staged copy goes before it); the earlier ones (the tile's program ids)
  // stay, the printer computes them for the next tile.
  VarMap late_lets;
  const StmtNode* first = nullptr;
  std::vector<Stmt> prologue;
  for (const RoleItem& it : *roles) {
    if (it.kind == RoleItem::Kind::kProducer) {
      if (!first) first = it.stmt.get();
      prologue.push_back(it.stmt);
    }
    if (it.kind == RoleItem::Kind::kLet && first)
      late_lets[it.let_var.get()] = substitute(it.let_value, late_lets);
  }
  if (prologue.empty()) return kernel;
  const Var tile_var("i_pf", DType::I32);
  Collect collect(late_lets, tile_var);
  for (const Stmt& s : prologue) collect.stmt(s);
  why = collect.why;
  const std::vector<IndexLoad>& loads = collect.loads;
  if (why.empty() && loads.empty()) return kernel;  // nothing to wait for
  const IndexLoad* lead = loads.empty() ? nullptr : &loads[0];
  int64_t extent = 0;
  for (const IndexLoad& l : loads) {
    if (!why.empty()) break;
    extent = std::max(extent, l.extent);
    if (!l.load->buffer.same_as(lead->load->buffer) || !structural_equal(l.base, lead->base) ||
        l.mask.defined() != lead->mask.defined() ||
        (l.mask.defined() && !structural_equal(l.mask, lead->mask)) ||
        l.load->other.defined() != lead->load->other.defined() ||
        (l.load->other.defined() && !structural_equal(l.load->other, lead->load->other)))
      why = "the prologue's loads read more than one tile of memory";
    if (l.var.dtype() != lead->var.dtype()) why = "prologue vars of two dtypes";
  }
  if (why.empty() && !(extent % producer_threads == 0 || extent < producer_threads))
    why = fmt::format("its {}-element index tile does not split evenly among {} producer threads",
                      extent, producer_threads);
  Kernel out = kernel;
  if (!why.empty()) {
    out.launch.notes.push_back("no prologue prefetch: " + why);
    return out;
  }
  const Buffer& src = lead->load->buffer;
  const Buffer tile = BufferNode::make(src.name() + "_tile", src.dtype(), MemScope::Shared,
                                       {make_int(DType::I32, extent)});
  const Var i(tile_var.name(), lead->var.dtype());
  VarMap to_i;
  to_i[tile_var.get()] = i;
  const Expr mask = lead->mask.defined() ? substitute(lead->mask, to_i) : Expr();
  const Expr value =
      LoadNode::make(src, {passes::simplify(lead->base + Expr(i))}, mask, lead->load->other);
  CopyPlan plan;
  plan.mechanism = CopyMechanism::Register;
  plan.width = dtype_size(src.dtype());
  plan.register_slots = static_cast<int>(std::max<int64_t>(1, extent / producer_threads));
  plan.next_tile = true;
  plan.reason = fmt::format(
      "the persistent producer's index tile: loaded one tile ahead into {} register(s) a "
      "thread, stored here at the start of its tile (prefetch_prologue)",
      plan.register_slots);
  const Stmt copy = CopyNode::make({i}, {make_int(DType::I32, extent)}, tile, {Expr(i)}, value, plan);
  Redirect redirect(loads, tile);
  Insert insert(first, tile, copy, &redirect);
  out.body = insert.mutate(kernel.body);
  TF_CHECK(insert.done, "prefetch_prologue: the first prologue statement was not found");
  out.launch.notes.push_back(fmt::format(
      "prologue prefetch: the producer loads tile t + 1's {} rows of `{}` into registers while "
      "tile t's copies run",
      extent, src.name()));
  return out;
}

}  // namespace tilefuse::codegen
