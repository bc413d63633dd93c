// CSE over blocks; see cse.h for the rules. One candidate at a time: find
// the earliest statement with a legal repeated expression, bind it before
// that statement, rewrite the rest of the block, and continue on the rest.
#include "passes/cse.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/stack_guard.h"
#include "tir/functor.h"
#include "tir/structural.h"

namespace tilefuse::passes {

namespace {

using namespace tir;  // NOLINT

bool is_trivial(const Expr& e) {
  return e.as<IntImmNode>() || e.as<FloatImmNode>() || e.as<VarNode>();
}

// Facts about one expression: its size, the buffers it loads, whether it
// contains a hook or one of a set of excluded vars.
struct ExprFacts : IRVisitor {
  using IRVisitor::visit;
  const std::unordered_set<const VarNode*>* excluded = nullptr;
  int size = 0;
  bool has_hook = false, has_excluded = false;
  std::unordered_set<const BufferNode*> loads;
  void visit_expr(const Expr& e) override {
    ++size;
    IRVisitor::visit_expr(e);
  }
  void visit(const VarNode* op) override {
    if (excluded && excluded->count(op)) has_excluded = true;
  }
  void visit(const LoadNode* op) override {
    loads.insert(op->buffer.get());
    IRVisitor::visit(op);
  }
  void visit(const HookLoadNode* op) override {
    has_hook = true;
    IRVisitor::visit(op);
  }
};

// The buffers a statement (with everything nested in it) may write.
struct Writes {
  std::unordered_set<const BufferNode*> buffers;
  bool everything = false;
  void add(const Writes& w) {
    buffers.insert(w.buffers.begin(), w.buffers.end());
    everything |= w.everything;
  }
};

// Writes of statements, memoized per node (the node kept alive with its
// entry): a chain of lets is one block per let, and each block asks for the
// writes of the whole chain below it, which a fresh walk per block would
// make quadratic.
class WritesMemo {
 public:
  const Writes& of(const Stmt& s) {
    check_stack("a Tile IR statement (cse)");
    if (auto it = memo_.find(s.get()); it != memo_.end()) return it->second.second;
    Writes w;
    if (const auto* op = s.as<StoreNode>()) {
      w.buffers.insert(op->buffer.get());
    } else if (const auto* op = s.as<CopyNode>()) {
      w.buffers.insert(op->dst.get());
    } else if (const auto* op = s.as<FillNode>()) {
      w.buffers.insert(op->buffer.get());
    } else if (const auto* op = s.as<GemmNode>()) {
      w.buffers.insert(op->c.buffer.get());
    } else if (s.as<BarrierNode>() || s.as<HookStoreNode>() || s.as<LastArrivalNode>()) {
      // (if_last_arrival: the body sees other instances' stores.)
      // Other threads write shared memory across a barrier; store_output
      // writes an output whose buffer is not known yet.
      w.everything = true;
    } else if (const auto* op = s.as<ForNode>()) {
      w.add(of(op->body));
    } else if (const auto* op = s.as<IfThenElseNode>()) {
      w.add(of(op->then_case));
      if (op->else_case.defined()) w.add(of(op->else_case));
    } else if (const auto* op = s.as<LetStmtNode>()) {
      w.add(of(op->body));
    } else if (const auto* op = s.as<AllocateNode>()) {
      w.add(of(op->body));
    } else if (const auto* op = s.as<SeqNode>()) {
      for (const Stmt& c : op->stmts) w.add(of(c));
    }
    return memo_.emplace(s.get(), std::make_pair(s, std::move(w))).first->second.second;
  }

 private:
  std::unordered_map<const StmtNode*, std::pair<Stmt, Writes>> memo_;
};

// A statement's own expressions: those evaluated by the statement itself,
// not by statements nested in it. `bound` gets a copy's vars.
std::vector<Expr> own_exprs(const Stmt& s, std::unordered_set<const VarNode*>* bound) {
  std::vector<Expr> out;
  auto add = [&](const Expr& e) {
    if (e.defined()) out.push_back(e);
  };
  auto add_all = [&](const std::vector<Expr>& es) {
    for (const Expr& e : es) add(e);
  };
  if (const auto* op = s.as<StoreNode>()) {
    add_all(op->indices), add(op->value), add(op->mask);
  } else if (const auto* op = s.as<HookStoreNode>()) {
    add_all(op->indices), add(op->value), add(op->mask);
  } else if (const auto* op = s.as<EvaluateNode>()) {
    add(op->value);
  } else if (const auto* op = s.as<CheckNode>()) {
    add(op->cond), add_all(op->args);
  } else if (const auto* op = s.as<FillNode>()) {
    add(op->value);
  } else if (const auto* op = s.as<CopyNode>()) {
    add_all(op->extents), add_all(op->dst_indices), add(op->value);
    for (const Var& v : op->vars) bound->insert(v.get());
  } else if (const auto* op = s.as<ForNode>()) {
    add(op->min), add(op->extent);
  } else if (const auto* op = s.as<IfThenElseNode>()) {
    add(op->cond);
  } else if (const auto* op = s.as<LetStmtNode>()) {
    add(op->value);
  }
  return out;
}

// Replaces every occurrence of `target` (structurally) by `var`.
class Replacer : public IRMutator {
 public:
  Replacer(const Expr& target, const Var& var)
      : target_(target), hash_(structural_hash(target)), var_(var) {}
  using IRMutator::mutate;
  Expr mutate(const Expr& e) override {
    if (e.kind() == target_.kind() && structural_hash(e) == hash_ && structural_equal(e, target_)) {
      return var_;
    }
    return IRMutator::mutate(e);
  }

  // The statement with its own expressions rewritten, nested bodies kept.
  Stmt replace_own(const Stmt& s) {
    if (const auto* op = s.as<ForNode>()) {
      Expr min = mutate(op->min), extent = mutate(op->extent);
      if (min.same_as(op->min) && extent.same_as(op->extent)) return s;
      return ForNode::make(op->var, min, extent, op->for_kind, op->num_stages, op->body);
    }
    if (const auto* op = s.as<IfThenElseNode>()) {
      Expr cond = mutate(op->cond);
      if (cond.same_as(op->cond)) return s;
      return IfThenElseNode::make(cond, op->then_case, op->else_case);
    }
    if (const auto* op = s.as<LetStmtNode>()) {
      Expr value = mutate(op->value);
      if (value.same_as(op->value)) return s;
      return LetStmtNode::make(op->var, value, op->body);
    }
    switch (s.kind()) {
      case StmtKind::Store:
      case StmtKind::HookStore:
      case StmtKind::Evaluate:
      case StmtKind::Check:
      case StmtKind::Fill:
      case StmtKind::Copy:
        return mutate(s);  // no nested statements
      default:
        return s;
    }
  }

 private:
  Expr target_;
  uint64_t hash_;
  Var var_;
};

struct Occurrence {
  Expr expr;
  int count = 0, first = 0, last = 0, size = 0;
  int seen = 0;  // the block's pre-order position of its first occurrence (the tie-break)
  bool legal = true;
};

class CSE {
 public:
  // A block: the statements of a Seq, or one statement.
  Stmt block(const Stmt& s) {
    std::vector<Stmt> children;
    if (const auto* seq = s.as<SeqNode>()) {
      children = seq->stmts;
    } else {
      children = {s};
    }
    bool changed = false;
    for (Stmt& c : children) {
      Stmt d = descend(c);
      changed |= !d.same_as(c);
      c = d;
    }
    size_t before = children.size();
    std::vector<Stmt> out;
    for (size_t first = 0; first < children.size(); first += kMaxCseBlock) {
      const std::vector<Stmt> run(children.begin() + static_cast<std::ptrdiff_t>(first),
                                  children.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                         children.size(), first + kMaxCseBlock)));
      for (Stmt& s2 : cse_block(run)) out.push_back(std::move(s2));
    }
    if (!changed && out.size() == before) {
      bool same = true;
      for (size_t i = 0; i < out.size(); ++i) same &= out[i].same_as(children[i]);
      if (same) return s;
    }
    return make_seq(std::move(out));
  }

 private:
  // The statement with the blocks nested in it processed.
  Stmt descend(const Stmt& s) {
    if (const auto* op = s.as<ForNode>()) {
      Stmt body = block(op->body);
      if (body.same_as(op->body)) return s;
      return ForNode::make(op->var, op->min, op->extent, op->for_kind, op->num_stages, body);
    }
    if (const auto* op = s.as<IfThenElseNode>()) {
      Stmt t = block(op->then_case);
      Stmt e = op->else_case.defined() ? block(op->else_case) : op->else_case;
      if (t.same_as(op->then_case) && e.same_as(op->else_case)) return s;
      return IfThenElseNode::make(op->cond, t, e);
    }
    if (const auto* op = s.as<LetStmtNode>()) {
      Stmt body = block(op->body);
      if (body.same_as(op->body)) return s;
      return LetStmtNode::make(op->var, op->value, body);
    }
    if (const auto* op = s.as<LastArrivalNode>()) {
      Stmt body = block(op->body);
      if (body.same_as(op->body)) return s;
      return LastArrivalNode::make(op->counter, op->indices, op->count, body);
    }
    if (const auto* op = s.as<AllocateNode>()) {
      Stmt body = block(op->body);
      if (body.same_as(op->body)) return s;
      return AllocateNode::make(op->buffer, body);
    }
    return s;
  }

  std::vector<Stmt> cse_block(const std::vector<Stmt>& children) {
    using Table = std::unordered_map<Expr, Occurrence, ExprStructuralHash, ExprStructuralEqual>;
    Table table;
    int seen = 0;
    std::vector<const Writes*> writes(children.size());
    for (size_t i = 0; i < children.size(); ++i) {
      std::unordered_set<const VarNode*> bound;
      for (const Expr& root : own_exprs(children[i], &bound)) {
        // Every subexpression of root, pre-order.
        std::vector<Expr> stack{root};
        while (!stack.empty()) {
          Expr e = stack.back();
          stack.pop_back();
          if (is_trivial(e)) continue;
          ExprFacts facts;
          facts.excluded = &bound;
          facts.visit_expr(e);
          if (!facts.has_hook && !facts.has_excluded) {
            Occurrence& o = table[e];
            if (o.count == 0) {
              o.expr = e;
              o.first = static_cast<int>(i);
              o.size = facts.size;
              o.seen = seen++;
            }
            ++o.count;
            o.last = static_cast<int>(i);
          }
          push_children(e, &stack);
        }
      }
      writes[i] = &writes_.of(children[i]);
    }
    // The earliest, then largest, legal candidate; among equals the first
    // met, so the choice does not follow the table's order (hashes of
    // pointers: it varied run to run, and so did the emitted names).
    const Occurrence* best = nullptr;
    for (auto& [key, o] : table) {
      // Conditions and masks stay in place: they cost one compare, and licm
      // and lower_copies read their conjuncts (a K-tail `k*32 + j < K`).
      if (o.count < 2 || o.expr.dtype() == DType::Bool) continue;
      ExprFacts facts;
      facts.visit_expr(o.expr);
      bool legal = true;
      for (int i = o.first; i < o.last && legal; ++i) {
        if (writes[i]->everything && !facts.loads.empty()) legal = false;
        for (const BufferNode* b : facts.loads) legal &= !writes[i]->buffers.count(b);
      }
      if (!legal) continue;
      if (!best || o.first < best->first ||
          (o.first == best->first &&
           (o.size > best->size || (o.size == best->size && o.seen < best->seen)))) {
        best = &o;
      }
    }
    if (!best) return children;

    Var var("cse", best->expr.dtype());
    Replacer replacer(best->expr, var);
    std::vector<Stmt> rest;
    for (size_t i = best->first; i < children.size(); ++i) {
      rest.push_back(replacer.replace_own(children[i]));
    }
    std::vector<Stmt> out(children.begin(), children.begin() + best->first);
    Stmt let = LetStmtNode::make(var, best->expr, make_seq(cse_block(rest)));
    // The bound value may itself hold repeats: bind those before it.
    for (Stmt& s : cse_block({let})) out.push_back(s);
    return out;
  }

  WritesMemo writes_;

  static void push_children(const Expr& e, std::vector<Expr>* stack) {
    struct Children : IRVisitor {
      std::vector<Expr>* out;
      bool top = true;
      void visit_expr(const Expr& x) override {
        if (top) {
          top = false;
          IRVisitor::visit_expr(x);
        } else {
          out->push_back(x);
        }
      }
    } c;
    c.out = stack;
    c.visit_expr(e);
  }
};

}  // namespace

Kernel eliminate_common_subexpressions(const Kernel& kernel) {
  Kernel out = kernel;
  out.body = CSE().block(kernel.body);
  return out;
}

}  // namespace tilefuse::passes
