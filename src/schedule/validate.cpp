// The plan validator (see validate.h for the list of checks).
#include "schedule/validate.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "schedule/internal.h"

namespace tilefuse {

using schedule_internal::is_elementwise;
using schedule_internal::is_gemm;

namespace {

std::string id(ValueId v) {
  return schedule_internal::id_ref(v);
}

class Validator {
 public:
  Validator(const Graph& g, const Plan& p) : g_(g), p_(p) {}

  std::vector<std::string> run() {
    std::set<ValueId> available(g_.parameters().begin(), g_.parameters().end());
    std::set<std::string> names;
    std::vector<int> writes(static_cast<size_t>(g_.size()), 0);
    for (size_t i = 0; i < p_.steps.size(); ++i) {
      const KernelStep& s = p_.steps[i];
      where_ = "step " + std::to_string(i) + " (" + s.name + ")";
      if (!names.insert(s.name).second) error("duplicate step name");
      if (!valid(s.output)) {
        error("invalid output " + id(s.output));
        continue;
      }
      if (g_.node(s.output).kind == OpKind::Parameter) error("writes parameter " + id(s.output));
      if (++writes[s.output] > 1) error("writes " + id(s.output) + " a second time");
      for (ValueId r : s.reads) {
        if (!valid(r) || !available.count(r)) {
          error("reads " + id(r) + " before any step writes it");
        }
      }
      if (s.kind == StepKind::kGemm) {
        check_gemm(s);
      } else {
        check_pointwise(s);
      }
      available.insert(s.output);
    }
    where_ = "plan";
    for (ValueId o : g_.outputs()) {
      if (!valid(o)) {
        error("invalid graph output " + id(o));
      } else if (g_.node(o).kind != OpKind::Parameter && writes[o] != 1) {
        error("graph output " + id(o) + " is written by " + std::to_string(writes[o]) + " steps");
      }
    }
    std::vector<ValueId> materialized = g_.parameters();
    for (const KernelStep& s : p_.steps) materialized.push_back(s.output);
    if (p_.materialized != materialized)
      error("`materialized` is not the parameters then the step outputs");
    check_coverage();
    return std::move(errors_);
  }

 private:
  bool valid(ValueId v) const { return v >= 0 && v < g_.size(); }

  void error(const std::string& msg) { errors_.push_back(where_ + ": " + msg); }

  // Increasing, closed over `reads` (and `anchor`, the accumulator), every read used.
  void check_list(const std::string& what, const std::vector<ValueId>& nodes,
                  const std::vector<ValueId>& reads, ValueId anchor, bool views_only) {
    std::set<ValueId> defined, used;
    const std::set<ValueId> readable(reads.begin(), reads.end());
    if (!std::is_sorted(reads.begin(), reads.end()) ||
        std::adjacent_find(reads.begin(), reads.end()) != reads.end()) {
      error(what + ": reads are not increasing");
    }
    ValueId prev = -1;
    for (ValueId v : nodes) {
      if (!valid(v)) {
        error(what + ": invalid node " + id(v));
        return;
      }
      if (v <= prev) error(what + ": " + id(v) + " is out of topological order");
      prev = v;
      const Node& n = g_.node(v);
      if (n.kind == OpKind::Parameter || is_gemm(n)) {
        error(what + ": computes " + id(v) + ", a " + std::string(op_kind_name(n.kind)));
      }
      if (n.kind == OpKind::Scalar && nodes.size() != 1) {
        error(what + ": lists Scalar " + id(v));
      }
      if (views_only && !n.is_view()) error(what + ": computes non-view " + id(v));
      for (ValueId in : n.inputs) {
        if (defined.count(in) || in == anchor || g_.node(in).kind == OpKind::Scalar) continue;
        if (readable.count(in)) {
          used.insert(in);
        } else {
          error(what + ": " + id(v) + " needs " + id(in) +
                ", which is neither computed before it nor read");
        }
      }
      defined.insert(v);
    }
    for (ValueId r : reads) {
      if (!used.count(r)) error(what + ": reads " + id(r) + " but never uses it");
    }
  }

  void check_operand(const std::string& what, const OperandPrologue& p, ValueId expected) {
    if (p.operand != expected) {
      error(what + ": operand " + id(p.operand) + " is not the anchor's input " + id(expected));
      return;
    }
    if (p.nodes.empty()) {
      const bool constant = g_.node(expected).kind == OpKind::Scalar;
      if (p.reads != (constant ? std::vector<ValueId>{} : std::vector<ValueId>{expected})) {
        error(what + ": reads " + id(expected) + " directly, so it must read exactly it");
      }
      return;
    }
    if (p.nodes.back() != expected) error(what + ": the prologue does not end at the operand");
    check_list(what, p.nodes, p.reads, -1, p_.kind == PlanKind::kUnfused);
  }

  void check_gemm(const KernelStep& s) {
    if (!valid(s.anchor) || !is_gemm(g_.node(s.anchor))) {
      error("anchor " + id(s.anchor) + " is not a matmul or addmm");
      return;
    }
    const Node& an = g_.node(s.anchor);
    const size_t first = an.kind == OpKind::Addmm ? 1 : 0;
    check_operand("A", s.a, an.inputs[first]);
    check_operand("B", s.b, an.inputs[first + 1]);
    if (an.kind == OpKind::Addmm) {
      if (!s.bias) {
        error("addmm without a bias operand");
      } else {
        check_operand("bias", *s.bias, an.inputs[0]);
      }
    } else if (s.bias) {
      error("matmul with a bias operand");
    }
    check_list("epilogue", s.epilogue, s.epilogue_reads, s.anchor, false);
    if (s.epilogue.empty() ? s.output != s.anchor : s.epilogue.back() != s.output) {
      error("output " + id(s.output) + " is not the epilogue's last node (or the anchor)");
    }
    // Nodes that read the accumulator (directly or through the chain) must
    // read it at the index they write: elementwise, with the anchor's shape.
    std::set<ValueId> chain = {s.anchor};
    for (ValueId v : s.epilogue) {
      if (!valid(v)) continue;
      const Node& n = g_.node(v);
      const bool on_chain = std::any_of(n.inputs.begin(), n.inputs.end(),
                                        [&](ValueId in) { return chain.count(in) > 0; });
      if (!on_chain) continue;
      chain.insert(v);
      if (!is_elementwise(n) || !same_shape(n, an)) {
        error("epilogue: " + id(v) + " reads the accumulator but is not elementwise of its shape");
      }
    }
    if (!chain.count(s.output)) error("output " + id(s.output) + " does not use the accumulator");
    if (p_.kind == PlanKind::kUnfused && !s.epilogue.empty())
      error("unfused plan with an epilogue");
    std::vector<ValueId> reads = s.epilogue_reads;
    for (const OperandPrologue* p : {&s.a, &s.b}) {
      std::vector<ValueId> u;
      std::set_union(reads.begin(), reads.end(), p->reads.begin(), p->reads.end(),
                     std::back_inserter(u));
      reads = std::move(u);
    }
    if (s.bias) {
      std::vector<ValueId> u;
      std::set_union(reads.begin(), reads.end(), s.bias->reads.begin(), s.bias->reads.end(),
                     std::back_inserter(u));
      reads = std::move(u);
    }
    if (reads != s.reads) error("`reads` is not the union of the operands' and epilogue's reads");
  }

  void check_pointwise(const KernelStep& s) {
    if (s.pointwise.empty() || s.pointwise.back() != s.output) {
      error("the pointwise nodes do not end at the output " + id(s.output));
    }
    if (s.anchor != -1 || !s.epilogue.empty() || !s.a.nodes.empty() || !s.b.nodes.empty()) {
      error("a pointwise step with GEMM fields");
    }
    check_list("pointwise", s.pointwise, s.reads, -1, false);
  }

  void check_coverage() {
    std::vector<bool> live(static_cast<size_t>(g_.size()), false), computed = live;
    for (ValueId o : g_.outputs()) {
      if (valid(o)) live[o] = true;
    }
    for (ValueId v = g_.size() - 1; v >= 0; --v) {
      if (live[v]) {
        for (ValueId in : g_.node(v).inputs) live[in] = true;
      }
    }
    auto mark = [&](const std::vector<ValueId>& vs) {
      for (ValueId v : vs) {
        if (valid(v)) computed[v] = true;
      }
    };
    for (const KernelStep& s : p_.steps) {
      if (valid(s.anchor)) computed[s.anchor] = true;
      mark(s.a.nodes);
      mark(s.b.nodes);
      if (s.bias) mark(s.bias->nodes);
      mark(s.epilogue);
      mark(s.pointwise);
    }
    for (ValueId v = 0; v < g_.size(); ++v) {
      const OpKind k = g_.node(v).kind;
      if (live[v] && !computed[v] && k != OpKind::Parameter && k != OpKind::Scalar) {
        error("live node " + id(v) + " is computed by no step");
      }
    }
  }

  const Graph& g_;
  const Plan& p_;
  std::string where_;
  std::vector<std::string> errors_;
};

}  // namespace

std::vector<std::string> validate_plan(const Graph& graph, const Plan& plan) {
  return Validator(graph, plan).run();
}

}  // namespace tilefuse
