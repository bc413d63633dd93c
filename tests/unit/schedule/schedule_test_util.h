// Helpers shared by the schedule tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontend/frontend.h"
#include "graph/graph.h"
#include "schedule/plan.h"
#include "schedule/schedule.h"
#include "schedule/validate.h"

namespace tilefuse::testing {

// A shared case from tests/cases (a copy of /work/shared/cases).
inline Program load_case(const std::string& name) {
  return load_program(std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases/" + name + ".tfs");
}

inline Program parse(const std::string& source) {
  return parse_program(source, "test.tfs");
}

// The op names of `nodes`, as the printers spell them: {"cast", "mul"}.
inline std::vector<std::string> ops(const Graph& g, const std::vector<ValueId>& nodes) {
  std::vector<std::string> out;
  for (ValueId v : nodes) {
    const Node& n = g.node(v);
    out.emplace_back(n.kind == OpKind::Unary    ? unary_op_name(n.unary)
                     : n.kind == OpKind::Binary ? binary_op_name(n.binary)
                                                : op_kind_name(n.kind));
  }
  return out;
}

// The parameter named `name`.
inline ValueId param_named(const Graph& g, const std::string& name) {
  for (ValueId p : g.parameters()) {
    if (g.node(p).name == name) return p;
  }
  ADD_FAILURE() << "no parameter " << name;
  return -1;
}

// The ids of the nodes of `kind`, increasing.
inline std::vector<ValueId> nodes_of(const Graph& g, OpKind kind) {
  std::vector<ValueId> out;
  for (ValueId v = 0; v < g.size(); ++v) {
    if (g.node(v).kind == kind) out.push_back(v);
  }
  return out;
}

inline std::vector<const KernelStep*> steps_of(const Plan& p, StepKind kind) {
  std::vector<const KernelStep*> out;
  for (const KernelStep& s : p.steps) {
    if (s.kind == kind) out.push_back(&s);
  }
  return out;
}

// Builds the plan of `kind`, checks that it validates (printing the graph,
// the plan and every violation otherwise) and returns it.
inline Plan checked_plan(const Graph& g, PlanKind kind) {
  Plan plan = build_plan(g, kind);
  const std::vector<std::string> errors = validate_plan(g, plan);
  std::string msg;
  for (const std::string& e : errors) msg += "  " + e + "\n";
  EXPECT_TRUE(errors.empty()) << "invalid plan:\n"
                              << msg << "graph:\n"
                              << g.to_string() << to_string(g, plan);
  return plan;
}

// True when some decision line contains `needle`.
inline bool has_decision(const Plan& p, const std::string& needle) {
  for (const std::string& d : p.decisions) {
    if (d.find(needle) != std::string::npos) return true;
  }
  return false;
}

}  // namespace tilefuse::testing
