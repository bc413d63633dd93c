#include "passes/licm.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "analysis/nonneg.h"
#include "tir/functor.h"
#include "tir/printer.h"
#include "tir/structural.h"

namespace tilefuse::passes {
namespace {

using namespace tir;  // NOLINT: a pass over the Tile IR

using VarSet = std::unordered_set<const VarNode*>;
using BufSet = std::unordered_set<const BufferNode*>;

// What a statement binds, writes and may stop on.
class Scan : public IRVisitor {
 public:
  VarSet bound;
  BufSet written;  // written or allocated inside: loads of them stay
  bool has_check = false;
  bool has_effect = false;  // anything but lets, loops, ifs and checks

  using IRVisitor::visit;
  VarMap first;  // inner loop / copy vars that surely run: their first value
  // Each let bound inside: its value. A var bound by sibling lets with
  // different values (legal: one is out of scope at the other) maps to an
  // undefined value: nothing is known about it.
  VarMap lets;

  // `written` also holds nullptr once any global buffer is written: then no
  // writable global may be read out of the loop (see "Aliasing" in licm.h).
  void write(const Buffer& b) {
    written.insert(b.get());
    if (b.scope() == MemScope::Global) written.insert(nullptr);
  }

  void visit(const ForNode* op) override {
    bound.insert(op->var.get());
    const int64_t* e = as_const_int(op->extent);
    if (e && *e > 0) first[op->var.get()] = op->min;
    IRVisitor::visit(op);
  }
  void visit(const LetStmtNode* op) override {
    bound.insert(op->var.get());
    auto [it, fresh] = lets.emplace(op->var.get(), op->value);
    if (!fresh && it->second.defined() && !structural_equal(it->second, op->value))
      it->second = Expr();
    IRVisitor::visit(op);
  }
  void visit(const CopyNode* op) override {
    for (size_t d = 0; d < op->vars.size(); ++d) {
      bound.insert(op->vars[d].get());
      const int64_t* e = as_const_int(op->extents[d]);
      if (e && *e > 0) first[op->vars[d].get()] = make_int(op->vars[d].dtype(), 0);
    }
    write(op->dst);
    has_effect = true;
    IRVisitor::visit(op);
  }
  void visit(const StoreNode* op) override {
    write(op->buffer);
    has_effect = true;
    IRVisitor::visit(op);
  }
  void visit(const FillNode* op) override {
    write(op->buffer);
    has_effect = true;
    IRVisitor::visit(op);
  }
  void visit(const GemmNode* op) override {
    write(op->c.buffer);
    has_effect = true;
    IRVisitor::visit(op);
  }
  void visit(const AllocateNode* op) override {
    written.insert(op->buffer.get());
    IRVisitor::visit(op);
  }
  void visit(const HookStoreNode* op) override {
    written.insert(nullptr);  // some global output
    has_effect = true;
    IRVisitor::visit(op);
  }
  void visit(const BarrierNode*) override { has_effect = true; }
  void visit(const EvaluateNode* op) override {
    has_effect = true;  // a placeholder passes use: keep it where it is
    IRVisitor::visit(op);
  }
  void visit(const CheckNode* op) override {
    has_check = true;
    IRVisitor::visit(op);
  }
};

Scan scan(const Stmt& s) {
  Scan sc;
  sc.visit_stmt(s);
  return sc;
}

using analysis::NonNegative;

Expr conjoin(const std::vector<Expr>& terms) {
  Expr r;
  for (const Expr& t : terms) r = r.defined() ? AndNode::make(r, t) : t;
  return r;
}

Expr and_opt(const Expr& a, const Expr& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return AndNode::make(a, b);
}

// True when `terms` prove 0 <= idx < dim.
bool in_bounds(const Expr& idx, const Expr& dim, const std::vector<Expr>& terms,
               const NonNegative& nn) {
  if (!nn.holds(idx)) return false;
  const int64_t* ci = as_const_int(idx);
  const int64_t* cd = as_const_int(dim);
  if (ci && cd) return *ci < *cd;
  for (const Expr& t : terms) {
    Expr lhs, rhs;  // lhs < rhs
    if (const LTNode* lt = t.as<LTNode>()) lhs = lt->a, rhs = lt->b;
    if (const GTNode* gt = t.as<GTNode>()) lhs = gt->b, rhs = gt->a;
    if (!lhs.defined() || !structural_equal(lhs, idx)) continue;
    if (structural_equal(rhs, dim)) return true;
    const int64_t* cr = as_const_int(rhs);
    if (cr && cd && *cr <= *cd) return true;
  }
  return false;
}

// Folds integer / bool operations on constants (what substituting first
// values leaves: `0*32 + 0 < 48`).
Expr fold(const Expr& e) {
  if (!is_binary_op(e.kind())) return e;
  Expr a, b;
  switch (e.kind()) {
#define TF_FOLD_CHILDREN(name, ...)  \
  case ExprKind::name:               \
    a = fold(e.as<name##Node>()->a); \
    b = fold(e.as<name##Node>()->b); \
    break;
    TILEFUSE_FOR_EACH_TIR_BINARY_OP(TF_FOLD_CHILDREN)
#undef TF_FOLD_CHILDREN
    default:
      return e;
  }
  const int64_t* x = as_const_int(a);
  const int64_t* y = as_const_int(b);
  if (x && y && !is_floating(a.dtype())) {
    const DType dt = e.dtype();
    const bool small = *x > -(int64_t{1} << 30) && *x < (int64_t{1} << 30) &&
                       *y > -(int64_t{1} << 30) && *y < (int64_t{1} << 30);
    switch (e.kind()) {
      case ExprKind::Add:
        if (small) return make_int(dt, *x + *y);
        break;
      case ExprKind::Sub:
        if (small) return make_int(dt, *x - *y);
        break;
      case ExprKind::Mul:
        if (small && *x < (1 << 15) && *y < (1 << 15) && *x > -(1 << 15) && *y > -(1 << 15))
          return make_int(dt, *x * *y);
        break;
      case ExprKind::LT:
        return make_bool(*x < *y);
      case ExprKind::LE:
        return make_bool(*x <= *y);
      case ExprKind::GT:
        return make_bool(*x > *y);
      case ExprKind::GE:
        return make_bool(*x >= *y);
      case ExprKind::EQ:
        return make_bool(*x == *y);
      case ExprKind::NE:
        return make_bool(*x != *y);
      case ExprKind::And:
        return make_bool(*x && *y);
      case ExprKind::Or:
        return make_bool(*x || *y);
      default:
        break;
    }
  }
  if (x && *x == 0 && e.kind() == ExprKind::Mul) return a;
  if (y && *y == 0 && (e.kind() == ExprKind::Mul)) return b;
  if (y && *y == 0 && (e.kind() == ExprKind::Add || e.kind() == ExprKind::Sub)) return a;
  if (x && *x == 0 && e.kind() == ExprKind::Add) return b;
  return make_binary(e.kind(), a, b);
}

void free_vars(const Expr& e, VarSet* out) {
  struct V : IRVisitor {
    VarSet* s;
    using IRVisitor::visit;
    void visit(const VarNode* op) override { s->insert(op); }
  } v;
  v.s = out;
  v.visit_expr(e);
}

// `vars` closed over the lets they name: a var bound by one of `lets` adds
// the vars of its value (what it really depends on). False when one of them
// has no known value.
bool close_over_lets(VarSet* vars, const VarMap& lets) {
  std::vector<const VarNode*> work(vars->begin(), vars->end());
  while (!work.empty()) {
    const VarNode* v = work.back();
    work.pop_back();
    auto it = lets.find(v);
    if (it == lets.end()) continue;
    if (!it->second.defined()) return false;
    VarSet inner;
    free_vars(it->second, &inner);
    for (const VarNode* u : inner)
      if (vars->insert(u).second) work.push_back(u);
  }
  return true;
}

size_t node_count(const Expr& e) {
  struct V : IRVisitor {
    size_t n = 0;
    using IRVisitor::visit;
    void visit_expr(const Expr& x) override {
      ++n;
      IRVisitor::visit_expr(x);
    }
  } v;
  v.visit_expr(e);
  return v.n;
}

// `e` with every var of `variant` that one of `lets` binds replaced by its
// value, transitively (a let's value only names vars bound before it, so
// this ends); undefined when the result would be unreasonably large.
Expr expand_variant_lets(Expr e, const VarMap& lets, const VarSet& variant) {
  for (;;) {
    VarSet vs;
    free_vars(e, &vs);
    VarMap m;
    for (const VarNode* v : vs) {
      auto it = lets.find(v);
      if (it != lets.end() && it->second.defined() && variant.count(v)) m[v] = it->second;
    }
    if (m.empty()) return e;
    e = substitute(e, m);
    if (node_count(e) > 4096) return {};
  }
}

// The hoisted form of an expression: the expression itself (or with the
// mask conjuncts that only guard other accesses dropped from its loads) when
// it is invariant in the loop, undefined otherwise.
class Invariant : public IRMutator {
 public:
  // `first`: the loop var's and the surely-running inner vars' first values
  // (for the witness rule); may be null. `lets`: the values of the lets
  // bound inside the loop (the loop body is understood modulo them: a
  // dropped conjunct over `let t = k*32` has the witness value of `k*32`);
  // may be null.
  Invariant(const VarSet& variant, const BufSet& written, const NonNegative& nn,
            const VarMap* first = nullptr, const VarMap* lets = nullptr)
      : variant_(variant), written_(written), nn_(nn), first_(first), lets_(lets) {}

  Expr hoisted(const Expr& e) {
    ok_ = true;
    Expr r = mutate(e);
    return ok_ ? r : Expr();
  }

 protected:
  using IRMutator::visit;
  Expr visit(const VarNode* op) override {
    if (variant_.count(op)) ok_ = false;
    return op;
  }
  Expr visit(const HookLoadNode* op) override {
    ok_ = false;
    return op;
  }
  Expr visit(const DivNode* op) override { return division(op, IRMutator::visit(op)); }
  Expr visit(const ModNode* op) override { return division(op, IRMutator::visit(op)); }
  Expr visit(const LoadNode* op) override {
    const Buffer& b = op->buffer;
    if (written_.count(b.get()) ||
        (b.scope() == MemScope::Global && !b->read_only && written_.count(nullptr))) {
      ok_ = false;
      return op;
    }
    std::vector<Expr> idx;
    bool changed = mutate_all(op->indices, &idx);
    Expr other = mutate_opt(op->other);
    if (!ok_ || !op->mask.defined()) {
      if (!changed && other.same_as(op->other)) return op;
      return LoadNode::make(op->buffer, std::move(idx), op->mask, std::move(other));
    }
    std::vector<Expr> terms, kept, dropped;
    conjuncts(op->mask, &terms);
    for (const Expr& t : terms) {
      Expr h = Invariant(variant_, written_, nn_, first_, lets_).hoisted(t);
      if (h.defined()) {
        changed |= !h.same_as(t);
        kept.push_back(h);
      } else {
        dropped.push_back(t);
      }
    }
    if (!dropped.empty()) {
      changed = true;
      // Dropping is legal when the address is valid without them...
      bool valid = true;
      for (size_t d = 0; d < idx.size(); ++d)
        valid = valid && in_bounds(idx[d], op->buffer->shape[d], kept, nn_);
      // ... or else each is replaced by its value at the loop's first
      // iteration (the witness lane: inner vars the address does not use
      // at their first value), so the hoisted load reads only addresses the
      // loop read in its first iteration.
      if (!valid) {
        if (!first_) {
          ok_ = false;
          return op;
        }
        // The address's vars, through the lets it reads (`row = f(i)`
        // uses i): those stay free at the witness lane.
        VarSet used;
        for (const Expr& i : idx) free_vars(i, &used);
        if (lets_ && !close_over_lets(&used, *lets_)) {
          ok_ = false;
          return op;
        }
        for (Expr t : dropped) {
          // A variant let the conjunct reads is evaluated before the load
          // in the same iteration: at the witness lane it has its value's
          // value there (`cse + j < 48` with `let cse = k*32` is `0 < 48`).
          if (lets_) t = expand_variant_lets(t, *lets_, variant_);
          if (!t.defined()) {
            ok_ = false;
            return op;
          }
          VarSet tv;
          free_vars(t, &tv);
          VarMap w;
          for (const VarNode* v : tv) {
            auto f = first_->find(v);
            if (f != first_->end() && !used.count(v)) w[v] = f->second;
          }
          Expr h = Invariant(variant_, written_, nn_).hoisted(fold(substitute(t, w)));
          const int64_t* c = h.defined() ? as_const_int(h) : nullptr;
          if (!h.defined() || (c && *c == 0)) {
            ok_ = false;
            return op;
          }
          if (!c) kept.push_back(h);
        }
      }
    }
    if (!changed && other.same_as(op->other)) return op;
    return LoadNode::make(op->buffer, std::move(idx), conjoin(kept), std::move(other));
  }

 private:
  // Only a nonzero constant divisor: a hoisted division must not fault
  // where the loop would not have run.
  template <class Node>
  Expr division(const Node* op, Expr r) {
    const int64_t* c = as_const_int(op->b);
    if (!c || *c == 0) ok_ = false;
    return r;
  }

  const VarSet& variant_;
  const BufSet& written_;
  const NonNegative& nn_;
  const VarMap* first_;
  const VarMap* lets_;
  bool ok_ = true;
};

// ANDs the loop-entry guard into the mask of every load.
class GuardLoads : public IRMutator {
 public:
  explicit GuardLoads(Expr guard) : guard_(std::move(guard)) {}

 protected:
  using IRMutator::visit;
  Expr visit(const LoadNode* op) override {
    Expr e = IRMutator::visit(op);
    const LoadNode* l = e.as<LoadNode>();
    return LoadNode::make(l->buffer, l->indices, and_opt(l->mask, guard_), l->other);
  }

 private:
  Expr guard_;
};

class CostlyFinder : public IRVisitor {
 public:
  bool found = false;
  using IRVisitor::visit;
  void visit(const LoadNode*) override { found = true; }
  void visit(const CallNode*) override { found = true; }
};

bool costly(const Expr& e) {
  CostlyFinder f;
  f.visit_expr(e);
  return f.found;
}

// A block flattened into statements and the lets / allocs that scope over
// the entries after them.
struct Entry {
  Var var;  // a let
  Expr value;
  Buffer alloc;  // an alloc
  Stmt stmt;     // a statement
};

void flatten(const Stmt& s, std::vector<Entry>* out) {
  if (const SeqNode* seq = s.as<SeqNode>()) {
    for (const Stmt& x : seq->stmts) flatten(x, out);
  } else if (const LetStmtNode* let = s.as<LetStmtNode>()) {
    out->push_back({let->var, let->value, {}, {}});
    flatten(let->body, out);
  } else if (const AllocateNode* a = s.as<AllocateNode>()) {
    out->push_back({{}, {}, a->buffer, {}});
    flatten(a->body, out);
  } else {
    out->push_back({{}, {}, {}, s});
  }
}

Stmt rebuild(const std::vector<Entry>& entries) {
  std::vector<Stmt> tail;  // reversed
  for (size_t i = entries.size(); i-- > 0;) {
    const Entry& e = entries[i];
    if (e.stmt.defined()) {
      tail.push_back(e.stmt);
      continue;
    }
    std::vector<Stmt> body(tail.rbegin(), tail.rend());
    Stmt inner = make_seq(std::move(body));
    tail.clear();
    tail.push_back(e.var.defined() ? LetStmtNode::make(e.var, e.value, inner)
                                   : AllocateNode::make(e.alloc, inner));
  }
  return make_seq(std::vector<Stmt>(tail.rbegin(), tail.rend()));
}

// Rewrites every expression of a statement to its hoisted form; ok is
// false when one of them is not invariant. Loads under an `if` inside the
// statement get no witness rule: the witness lane might not reach them.
class StmtInvariant : public IRMutator {
 public:
  StmtInvariant(const VarSet& variant, const BufSet& written, const NonNegative& nn,
                const VarMap* first, const VarMap* lets)
      : variant_(variant), written_(written), nn_(nn), first_(first), lets_(lets) {}
  bool ok = true;
  Expr mutate(const Expr& e) override {
    Expr h = Invariant(variant_, written_, nn_, if_depth_ ? nullptr : first_, lets_).hoisted(e);
    if (!h.defined()) ok = false;
    return h.defined() ? h : e;
  }
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const IfThenElseNode* op) override {
    Expr cond = mutate(op->cond);
    ++if_depth_;
    Stmt t = mutate(op->then_case), f = mutate_opt(op->else_case);
    --if_depth_;
    return IfThenElseNode::make(cond, t, f);
  }

 private:
  const VarSet& variant_;
  const BufSet& written_;
  const NonNegative& nn_;
  const VarMap* first_;
  const VarMap* lets_;
  int if_depth_ = 0;
};

class Licm : public IRMutator {
 public:
  Licm(NonNegative* nn, LicmReport* report) : nn_(nn), report_(report) {}

 protected:
  using IRMutator::visit;

  // What is known while hoisting out of one loop.
  struct Loop {
    std::string name;
    VarSet variant;  // vars bound in the loop (minus the lets that left it)
    BufSet written;
    VarMap first;            // first values: the loop var's and surely-running inner vars'
    VarMap lets;             // values of the lets bound inside (hoisted ones: as hoisted)
    Expr guard;              // extent > 0; undefined for a constant positive extent
    bool may_sync = false;   // a barrier may be placed before the loop
    std::vector<Entry> pre;  // what goes before the loop, in order
    struct Materialized {
      Expr expr;     // as written in the copy
      Expr hoisted;  // what the buffer holds (its free copy vars index it)
      Buffer buffer;
    };
    std::vector<Materialized> materialized;
    bool needs_barrier = false;  // one barrier after all materializing copies
  };

  Stmt visit(const ForNode* op) override {
    if (op->for_kind == ForKind::Parallel) ++parallel_depth_;
    ++loop_depth_;
    Stmt body = mutate(op->body);  // inner loops first: what left them may leave this one
    --loop_depth_;
    if (op->for_kind == ForKind::Parallel) --parallel_depth_;
    auto same = [&] {
      if (body.same_as(op->body)) return Stmt(op);
      return ForNode::make(op->var, op->min, op->extent, op->for_kind, op->num_stages, body);
    };
    const int64_t* ce = as_const_int(op->extent);
    if (ce && *ce <= 0) return same();  // never runs: nothing to gain

    Loop L;
    L.name = op->var.name();
    Scan sc = scan(body);
    L.variant = sc.bound;
    L.variant.insert(op->var.get());
    L.written = sc.written;
    L.first = sc.first;
    L.lets = sc.lets;
    L.first[op->var.get()] = op->min;
    if (!ce) L.guard = GTNode::make(op->extent, make_int(op->extent.dtype(), 0));
    L.may_sync = parallel_depth_ == 0 && copy_depth_ == 0;

    std::vector<Entry> entries, kept;
    flatten(body, &entries);
    bool check_stays = false;  // an unhoisted check precedes
    for (const Entry& en : entries) {
      if (en.var.defined()) {
        Expr h = Invariant(L.variant, L.written, *nn_, &L.first, &L.lets).hoisted(en.value);
        if (h.defined()) {
          L.pre.push_back({en.var, guarded(L, h), {}, {}});
          L.variant.erase(en.var.get());
          if (auto it = L.lets.find(en.var.get()); it != L.lets.end() && it->second.defined())
            it->second = h;
          if (nn_->holds(h)) nn_->vars.insert(en.var.get());
          note("let", en.var.get(), print(en.var) + " = " + print(h), L.name);
        } else {
          kept.push_back({en.var, extract(L, en.value, nullptr), {}, {}});
        }
        continue;
      }
      if (en.alloc.defined()) {
        kept.push_back(en);
        continue;
      }
      Scan ss = scan(en.stmt);
      if (!ss.has_effect && ss.has_check && !check_stays) {
        VarSet v = L.variant;
        for (const VarNode* b : ss.bound) v.erase(b);
        StmtInvariant si(v, L.written, *nn_, &L.first, &L.lets);
        Stmt h = si.mutate(en.stmt);
        if (si.ok) {
          if (L.guard.defined()) {
            // Re-hoisting an already guarded check merges the guards.
            const IfThenElseNode* g = h.as<IfThenElseNode>();
            h = g && !g->else_case.defined()
                    ? IfThenElseNode::make(AndNode::make(L.guard, g->cond), g->then_case)
                    : IfThenElseNode::make(L.guard, h);
          }
          L.pre.push_back({{}, {}, {}, h});
          note_stmt(en.stmt.get(), h.get(), en.stmt, L.name);
          continue;
        }
      }
      if (ss.has_check) check_stays = true;
      kept.push_back({{}, {}, {}, extract_stmt(L, en.stmt)});
    }
    if (L.pre.empty()) return same();
    // A loop left with only lets (or nothing) does nothing: drop it.
    bool has_stmt = false;
    for (const Entry& en : kept) has_stmt |= en.stmt.defined();
    if (L.needs_barrier) L.pre.push_back({{}, {}, {}, BarrierNode::make()});
    if (has_stmt)
      L.pre.push_back({{},
                       {},
                       {},
                       ForNode::make(op->var, op->min, op->extent, op->for_kind, op->num_stages,
                                     rebuild(kept))});
    return rebuild(L.pre);
  }

  Stmt visit(const CopyNode* op) override {
    ++copy_depth_;
    Stmt s = IRMutator::visit(op);
    --copy_depth_;
    return s;
  }

 private:
  Expr guarded(const Loop& L, const Expr& e) {
    return L.guard.defined() ? GuardLoads(L.guard).mutate(e) : e;
  }

  // Replaces costly invariant subexpressions by let vars before the loop.
  // Inside a copy (`copy` set), an index value that varies only with the
  // copy's vars (a gathered row index[m0 + i]) is materialized instead:
  // computed once per point into a shared buffer before the loop (then a
  // barrier) and read back by the copy.
  class Extract : public IRMutator {
   public:
    Extract(Licm* licm, Loop* loop, const CopyNode* copy) : licm_(licm), L_(loop), copy_(copy) {}
    using IRMutator::mutate;
    Expr mutate(const Expr& e) override {
      if (costly(e) && e.kind() != ExprKind::Var) {
        Expr h = Invariant(L_->variant, L_->written, *licm_->nn_, &L_->first, &L_->lets).hoisted(e);
        if (h.defined()) {
          const LoadNode* l = h.as<LoadNode>();
          Var v(l ? l->buffer.name() + "_v" : std::string("inv"), h.dtype());
          L_->pre.push_back({v, licm_->guarded(*L_, h), {}, {}});
          if (licm_->nn_->holds(h)) licm_->nn_->vars.insert(v.get());
          licm_->note("expr", v.get(), print(v) + " = " + print(h), L_->name);
          return v;
        }
        if (Expr m = materialize(e); m.defined()) return m;
      }
      return IRMutator::mutate(e);
    }

   private:
    Expr materialize(const Expr& e) {
      const DType dt = e.dtype();
      if (!copy_ || !L_->may_sync || !(is_integral(dt) || dt == DType::Bool)) return {};
      for (const Loop::Materialized& m : L_->materialized)
        if (structural_equal(m.expr, e)) return read_back(m);
      VarSet v = L_->variant;
      for (const Var& cv : copy_->vars) v.erase(cv.get());
      Expr h = Invariant(v, L_->written, *licm_->nn_, &L_->first, &L_->lets).hoisted(e);
      if (!h.defined()) return {};
      // The copy dims it varies along (after dropped conjuncts); their
      // extents must be constants.
      VarSet used = free_vars(h);
      std::vector<Expr> shape;
      std::vector<Var> vars;
      VarMap fresh;
      for (size_t d = 0; d < copy_->vars.size(); ++d) {
        if (!used.count(copy_->vars[d].get())) continue;
        if (!as_const_int(copy_->extents[d])) return {};
        shape.push_back(copy_->extents[d]);
        vars.emplace_back(copy_->vars[d].name(), copy_->vars[d].dtype());
        fresh[copy_->vars[d].get()] = vars.back();
      }
      if (vars.empty()) return {};
      const std::string suffix = dt == DType::Bool ? "_ok" : "_rows";
      std::string name = "inv" + suffix;
      if (const LoadNode* l = first_load(h)) name = l->buffer.name() + suffix;
      Buffer buf = BufferNode::make(name, e.dtype(), MemScope::Shared, shape);
      std::vector<Expr> idx(vars.begin(), vars.end());
      // Inside another loop the previous iteration's readers may still be
      // reading the buffer: wait for them before overwriting it.
      if (L_->materialized.empty() && licm_->loop_depth_ > 0)
        L_->pre.push_back({{}, {}, {}, BarrierNode::make()});
      L_->pre.push_back({{}, {}, buf, {}});
      L_->pre.push_back(
          {{},
           {},
           {},
           CopyNode::make(vars, shape, buf, idx, licm_->guarded(*L_, substitute(h, fresh)))});
      L_->needs_barrier = true;
      L_->materialized.push_back({e, h, buf});
      licm_->note("expr", buf.get(), name + " = " + print(h), L_->name);
      return read_back(L_->materialized.back());
    }
    // The buffer's dims are the copy dims whose var the hoisted value uses.
    Expr read_back(const Loop::Materialized& m) {
      std::vector<Expr> idx;
      VarSet used = free_vars(m.hoisted);
      for (const Var& cv : copy_->vars)
        if (used.count(cv.get())) idx.push_back(cv);
      return LoadNode::make(m.buffer, std::move(idx));
    }
    static VarSet free_vars(const Expr& e) {
      struct V : IRVisitor {
        VarSet s;
        using IRVisitor::visit;
        void visit(const VarNode* op) override { s.insert(op); }
      } v;
      v.visit_expr(e);
      return v.s;
    }
    static const LoadNode* first_load(const Expr& e) {
      struct V : IRVisitor {
        const LoadNode* l = nullptr;
        using IRVisitor::visit;
        void visit(const LoadNode* op) override {
          if (!l) l = op;
        }
      } v;
      v.visit_expr(e);
      return v.l;
    }

    Licm* licm_;
    Loop* L_;
    const CopyNode* copy_;
  };

  Expr extract(Loop& L, const Expr& e, const CopyNode* copy) {
    if (!e.defined()) return e;
    return Extract(this, &L, copy).mutate(e);
  }

  // A statement's own expressions (not the bodies it contains, which may
  // run conditionally) with invariant parts extracted.
  Stmt extract_stmt(Loop& L, const Stmt& s) {
    auto x = [&](const Expr& e) { return extract(L, e, nullptr); };
    if (const StoreNode* op = s.as<StoreNode>()) {
      std::vector<Expr> idx;
      for (const Expr& i : op->indices) idx.push_back(x(i));
      return StoreNode::make(op->buffer, idx, x(op->value), x(op->mask));
    }
    if (const CopyNode* op = s.as<CopyNode>()) {
      auto xc = [&](const Expr& e) { return extract(L, e, op); };
      std::vector<Expr> ext, idx;
      for (const Expr& e : op->extents) ext.push_back(x(e));
      for (const Expr& i : op->dst_indices) idx.push_back(xc(i));
      Expr value = xc(op->value);
      return CopyNode::make(op->vars, ext, op->dst, idx, value, rebased_plan(op, value));
    }
    if (const CheckNode* op = s.as<CheckNode>()) {
      std::vector<Expr> args;
      Expr cond = x(op->cond);
      for (const Expr& a : op->args) args.push_back(x(a));
      return CheckNode::make(cond, op->code, op->message, args, op->loc);
    }
    if (const FillNode* op = s.as<FillNode>()) return FillNode::make(op->buffer, x(op->value));
    if (const ForNode* op = s.as<ForNode>()) {
      Expr min = x(op->min);
      Expr extent = x(op->extent);
      return ForNode::make(op->var, min, extent, op->for_kind, op->num_stages, op->body);
    }
    if (const IfThenElseNode* op = s.as<IfThenElseNode>())
      return IfThenElseNode::make(x(op->cond), op->then_case, op->else_case);
    return s;
  }

  void note(const char* kind, const void* key, std::string what, const std::string& loop) {
    if (!report_) return;
    auto it = index_.find(key);
    if (it != index_.end()) {
      report_->hoisted[it->second].to_loop = loop;
      ++report_->hoisted[it->second].levels;
      return;
    }
    index_[key] = report_->hoisted.size();
    report_->hoisted.push_back({kind, std::move(what), loop, loop, 1});
  }
  void note_stmt(const void* old_key, const void* new_key, const Stmt& s, const std::string& loop) {
    if (!report_) return;
    auto it = index_.find(old_key);
    if (it != index_.end()) {
      index_[new_key] = it->second;
      note("check", new_key, "", loop);
      return;
    }
    std::string text = print(s);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    note("check", new_key, text, loop);
  }

  NonNegative* nn_;
  LicmReport* report_;
  std::unordered_map<const void*, size_t> index_;
  int parallel_depth_ = 0;
  int loop_depth_ = 0;  // loops enclosing the one being processed
  int copy_depth_ = 0;
};

}  // namespace

tir::Kernel hoist_loop_invariants(const tir::Kernel& kernel, LicmReport* report) {
  NonNegative nn;
  nn.add_kernel(kernel);
  Licm licm(&nn, report);
  return licm.mutate_kernel(kernel);
}

}  // namespace tilefuse::passes
