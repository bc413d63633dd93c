// The plan's names and stable text form; the format is documented at to_string in plan.h.
#include "schedule/plan.h"

#include <string>
#include <vector>

namespace tilefuse {

std::string_view plan_kind_name(PlanKind kind) {
  return kind == PlanKind::kFused ? "fused" : "unfused";
}

std::string_view step_kind_name(StepKind kind) {
  return kind == StepKind::kGemm ? "gemm" : "pointwise";
}

namespace {

std::string value_ref(const Graph& g, ValueId v) {
  const std::string& name = g.node(v).name;
  return "%" + std::to_string(v) + (name.empty() ? "" : "(" + name + ")");
}

std::string op_ref(const Graph& g, ValueId v) {
  const Node& n = g.node(v);
  std::string op;
  switch (n.kind) {
    case OpKind::Unary:
      op = unary_op_name(n.unary);
      break;
    case OpKind::Binary:
      op = binary_op_name(n.binary);
      break;
    default:
      op = op_kind_name(n.kind);
      break;
  }
  return "%" + std::to_string(v) + "=" + op;
}

std::string list(const Graph& g, const std::vector<ValueId>& vs, bool ops) {
  if (vs.empty()) return "-";
  std::string s;
  for (ValueId v : vs) s += (s.empty() ? "" : ", ") + (ops ? op_ref(g, v) : value_ref(g, v));
  return s;
}

std::string type_of(const Graph& g, ValueId v) {
  const Node& n = g.node(v);
  return std::string(dtype_name(n.dtype)) + shape_to_string(n.shape);
}

// "  A %3: %3=index; reads %0(x), %2(idx)" or, read directly, "  B %1(w): reads %1(w)".
std::string operand_line(const Graph& g, const std::string& slot, const OperandPrologue& p) {
  std::string s = "  " + slot + " " + value_ref(g, p.operand) + ": ";
  if (!p.nodes.empty()) s += list(g, p.nodes, true) + "; ";
  return s + "reads " + list(g, p.reads, false) + "\n";
}

}  // namespace

std::string to_string(const Graph& g, const Plan& plan) {
  std::string s = "plan " + std::string(plan_kind_name(plan.kind)) + ": " +
                  std::to_string(plan.steps.size()) +
                  (plan.steps.size() == 1 ? " step\n" : " steps\n");
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const KernelStep& st = plan.steps[i];
    s += "step " + std::to_string(i) + " " + st.name + ": " + std::string(step_kind_name(st.kind));
    if (st.kind == StepKind::kGemm) {
      const GemmGeometry& geo = st.gemm;
      s += " " + op_ref(g, st.anchor) + " batch=" + shape_to_string(geo.batch) +
           " M=" + std::to_string(geo.m) + " N=" + std::to_string(geo.n) +
           " K=" + std::to_string(geo.k);
      if (geo.a_is_vector) s += " a_vector";
      if (geo.b_is_vector) s += " b_vector";
    }
    s += " -> " + value_ref(g, st.output) + " " + type_of(g, st.output) + "\n";
    if (st.kind == StepKind::kGemm) {
      s += operand_line(g, "A", st.a);
      s += operand_line(g, "B", st.b);
      if (st.bias) s += operand_line(g, "bias", *st.bias);
      s += "  epilogue: " + list(g, st.epilogue, true) + "; reads " +
           list(g, st.epilogue_reads, false) + "\n";
    } else {
      s += "  compute: " + list(g, st.pointwise, true) + "; reads " + list(g, st.reads, false) +
           "\n";
    }
  }
  s += "materialized: " + list(g, plan.materialized, false) + "\n";
  for (const std::string& d : plan.decisions) s += "decision: " + d + "\n";
  return s;
}

}  // namespace tilefuse
