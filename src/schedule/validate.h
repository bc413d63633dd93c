// The plan validator: checks plan.h's contract against the graph.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "schedule/plan.h"

namespace tilefuse {

// Returns one message per violation (empty: the plan is valid). Checks that
// - every graph output is a Parameter or the output of exactly one step, and
//   no value is written twice or a Parameter written at all;
// - steps are in topological order: each read is a parameter or the output
//   of an earlier step;
// - every node list is increasing and closed: each listed node's inputs are
//   earlier entries, the list's reads, Scalars or (epilogue) the anchor, and
//   every read is used; prologue and pointwise lists hold no GEMM;
// - a GEMM step's operands are its anchor's inputs, its epilogue ends at its
//   output, and each node reading the accumulator is elementwise with the
//   anchor's shape; an unfused plan's prologues are views only and its
//   epilogues empty;
// - `materialized` is the parameters then the step outputs;
// - every live node other than Parameters and Scalars is computed by a step.
std::vector<std::string> validate_plan(const Graph& graph, const Plan& plan);

}  // namespace tilefuse
