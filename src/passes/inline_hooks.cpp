// inline_hooks (see inline_hooks.h).
#include "passes/inline_hooks.h"

#include <cstdint>
#include <unordered_map>
#include <utility>

#include "tir/functor.h"
#include "tir/structural.h"

namespace tilefuse::passes {
namespace {

using tir::Expr;
using tir::Stmt;

// True when `v` is already 0 wherever `mask` is false: a load (through
// casts, which map 0 to 0) whose mask is `mask` or `mask && ...`, with no
// `other`. Such plain loads stay plain, so lower_copies sees pure loads.
bool zero_where_off(const Expr& v, const Expr& mask) {
  if (const auto* c = v.as<tir::CastNode>()) return zero_where_off(c->value, mask);
  const auto* load = v.as<tir::LoadNode>();
  if (!load || load->other.defined() || !load->mask.defined()) return false;
  if (tir::structural_equal(load->mask, mask)) return true;
  const auto* conj = load->mask.as<tir::AndNode>();
  return conj && tir::structural_equal(conj->a, mask);
}

class HookInliner : public tir::IRMutator {
 public:
  explicit HookInliner(const HookTable& table) : table_(table) {}

  using tir::IRMutator::mutate;
  using tir::IRMutator::visit;

  // Each statement collects the checks of its own expressions (its child
  // statements collect theirs) and is preceded by them.
  Stmt mutate(const Stmt& s) override {
    pending_.emplace_back();
    pending_hashes_.emplace_back();
    pending_lets_.emplace_back();
    Stmt out = tir::IRMutator::mutate(s);
    std::vector<Stmt> checks = std::move(pending_.back());
    std::vector<std::pair<tir::Var, Expr>> lets = std::move(pending_lets_.back());
    pending_.pop_back();
    pending_hashes_.pop_back();
    pending_lets_.pop_back();
    if (checks.empty() && lets.empty()) return out;
    if (const auto* copy = out.as<tir::CopyNode>()) {
      TF_CHECK(lets.empty(), "inline_hooks: a hook in a copy's value binds values");
      checks = {over_region(*copy, checks)};
    }
    checks.push_back(out);
    Stmt body = tir::make_seq(std::move(checks));
    for (size_t i = lets.size(); i-- > 0;)
      body = tir::LetStmtNode::make(lets[i].first, lets[i].second, body);
    return body;
  }

 protected:
  Expr visit(const tir::HookLoadNode* op) override {
    auto it = table_.inputs.find(op->name);
    if (it == table_.inputs.end())
      throw InternalError("inline_hooks: no input hook named \"" + op->name + "\"");
    std::vector<Expr> indices;
    mutate_all(op->indices, &indices);
    const Expr mask = mutate_opt(op->mask);
    HookExpansion e = it->second(indices, mask);
    TF_CHECK(e.value.defined() && e.value.dtype() == op->dtype,
             "input hook \"" + op->name + "\" returned another dtype than the hook's");
    TF_CHECK(!pending_.empty(), "a hook outside any statement");
    for (Stmt& c : e.checks) add_check(std::move(c));
    for (auto& l : e.lets) pending_lets_.back().push_back(std::move(l));
    // Masked off, a hook yields 0 for its whole prologue (`x - 1.1` must not
    // leave -1.1 in a K-tail element of a tile).
    if (mask.defined() && !zero_where_off(e.value, mask))
      return tir::SelectNode::make(mask, e.value, tir::make_const(e.value.dtype(), 0));
    return e.value;
  }

  Stmt visit(const tir::HookStoreNode* op) override {
    auto it = table_.outputs.find(op->name);
    if (it == table_.outputs.end())
      throw InternalError("inline_hooks: no output hook named \"" + op->name + "\"");
    std::vector<Expr> indices;
    mutate_all(op->indices, &indices);
    // The stored value may itself read hooks (their checks are pending).
    return it->second(indices, mutate(op->value), mutate_opt(op->mask));
  }

 private:
  // Adds `c` to the statement's checks unless an equal one is there (found
  // by hash: a chain of gathers brings hundreds of checks to one statement).
  void add_check(Stmt c) {
    const uint64_t h = tir::structural_hash(c);
    auto [first, last] = pending_hashes_.back().equal_range(h);
    for (auto it = first; it != last; ++it)
      if (tir::structural_equal(pending_.back()[it->second], c)) return;
    pending_hashes_.back().emplace(h, pending_.back().size());
    pending_.back().push_back(std::move(c));
  }

  // The checks of a copy's value, run for every point of its region: a
  // nest of parallel loops with fresh vars standing for the copy's.
  static Stmt over_region(const tir::CopyNode& copy, const std::vector<Stmt>& checks) {
    tir::VarMap map;
    std::vector<tir::Var> vars;
    for (const tir::Var& v : copy.vars) {
      tir::Var fresh(v.name(), v.dtype());
      map[v.get()] = fresh;
      vars.push_back(fresh);
    }
    Stmt body = tir::substitute(tir::make_seq(checks), map);
    for (size_t d = vars.size(); d-- > 0;)
      body = tir::ForNode::make(vars[d], tir::make_int(vars[d].dtype(), 0), copy.extents[d],
                                tir::ForKind::Parallel, 0, body);
    return body;
  }

  const HookTable& table_;
  std::vector<std::vector<Stmt>> pending_;
  std::vector<std::unordered_multimap<uint64_t, size_t>> pending_hashes_;  // hash -> index
  std::vector<std::vector<std::pair<tir::Var, Expr>>> pending_lets_;
};

}  // namespace

tir::Kernel inline_hooks(const tir::Kernel& kernel, const HookTable& table) {
  HookInliner inliner(table);
  return inliner.mutate_kernel(kernel);
}

}  // namespace tilefuse::passes
