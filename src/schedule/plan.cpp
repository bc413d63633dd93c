// The plan's names and stable text form; the format is documented at to_string in plan.h.
#include "schedule/plan.h"

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

#include "schedule/internal.h"

namespace tilefuse {

std::string_view plan_kind_name(PlanKind kind) {
  return kind == PlanKind::kFused ? "fused" : "unfused";
}

std::string_view step_kind_name(StepKind kind) {
  return kind == StepKind::kGemm ? "gemm" : "pointwise";
}

using schedule_internal::op_ref;
using schedule_internal::ref_list;
using schedule_internal::value_ref;

namespace {

std::string type_of(const Graph& g, ValueId v) {
  const Node& n = g.node(v);
  return fmt::format("{}{}", dtype_name(n.dtype), symbolic_shape_string(g, n));
}

// "  A %3: %3=index; reads %0(x), %2(idx)" or, read directly, "  B %1(w): reads %1(w)".
std::string operand_line(const Graph& g, std::string_view slot, const OperandPrologue& p) {
  const std::string nodes = p.nodes.empty() ? "" : ref_list(g, p.nodes, true) + "; ";
  return fmt::format("  {} {}: {}reads {}\n", slot, value_ref(g, p.operand), nodes,
                     ref_list(g, p.reads, false));
}

}  // namespace

std::string to_string(const Graph& g, const Plan& plan) {
  std::string s = fmt::format("plan {}: {} {}\n", plan_kind_name(plan.kind), plan.steps.size(),
                              plan.steps.size() == 1 ? "step" : "steps");
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const KernelStep& st = plan.steps[i];
    s += fmt::format("step {} {}: {}", i, st.name, step_kind_name(st.kind));
    if (st.kind == StepKind::kGemm) {
      const GemmGeometry& geo = st.gemm;
      auto dim = [&](int64_t v, SymbolId sym) {
        return sym == kFixedDim ? std::to_string(v) : g.symbols().at(sym).name;
      };
      std::string batch = "[";
      for (size_t d = 0; d < geo.batch.size(); ++d)
        batch += (d ? ", " : "") +
                 dim(geo.batch[d], d < geo.batch_symbols.size() ? geo.batch_symbols[d] : kFixedDim);
      batch += "]";
      s += fmt::format(" {} batch={} M={} N={} K={}{}{}", op_ref(g, st.anchor), batch,
                       dim(geo.m, geo.m_symbol), dim(geo.n, geo.n_symbol), dim(geo.k, geo.k_symbol),
                       geo.a_is_vector ? " a_vector" : "", geo.b_is_vector ? " b_vector" : "");
    }
    s += fmt::format(" -> {} {}\n", value_ref(g, st.output), type_of(g, st.output));
    if (st.kind == StepKind::kGemm) {
      s += operand_line(g, "A", st.a);
      s += operand_line(g, "B", st.b);
      if (st.bias) s += operand_line(g, "bias", *st.bias);
      s += fmt::format("  epilogue: {}; reads {}\n", ref_list(g, st.epilogue, true),
                       ref_list(g, st.epilogue_reads, false));
    } else {
      s += fmt::format("  compute: {}; reads {}\n", ref_list(g, st.pointwise, true),
                       ref_list(g, st.reads, false));
    }
  }
  s += fmt::format("materialized: {}\n", ref_list(g, plan.materialized, false));
  for (const std::string& d : plan.decisions) s += fmt::format("decision: {}\n", d);
  return s;
}

}  // namespace tilefuse
