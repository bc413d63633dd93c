// Helpers shared by the schedule's source files (not part of its API): op
// classes, and how the texts (plan printer, fusion decisions, validator
// messages) name values and nodes, so that all of them agree.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace tilefuse::schedule_internal {

inline bool is_gemm(const Node& n) {
  return n.kind == OpKind::Matmul || n.kind == OpKind::Addmm;
}

// The kinds an epilogue may apply to the accumulator (and that a pointwise
// kernel evaluates as math): one output element from the same-index elements
// of the (broadcast) inputs.
inline bool is_elementwise(const Node& n) {
  return n.kind == OpKind::Unary || n.kind == OpKind::Binary || n.kind == OpKind::Where ||
         n.kind == OpKind::Clamp || n.kind == OpKind::Cast;
}

// "%7". (Built by appending: GCC 12 warns, wrongly, when a string is
// prepended to a temporary one, as in "%" + std::to_string(v).)
inline std::string id_ref(ValueId v) {
  std::string s = "%";
  s += std::to_string(v);
  return s;
}

// "%0(x)" for a node bound to a .tfs name, else "%7".
inline std::string value_ref(const Graph& g, ValueId v) {
  std::string s = id_ref(v);
  const std::string& name = g.node(v).name;
  if (!name.empty()) s += "(" + name + ")";
  return s;
}

// The op as Graph::to_string spells it: "index", "add", "relu", "cast".
inline std::string op_name(const Node& n) {
  switch (n.kind) {
    case OpKind::Unary:
      return std::string(unary_op_name(n.unary));
    case OpKind::Binary:
      return std::string(binary_op_name(n.binary));
    default:
      return std::string(op_kind_name(n.kind));
  }
}

// "%3=index".
inline std::string op_ref(const Graph& g, ValueId v) {
  std::string s = id_ref(v);
  s += "=";
  s += op_name(g.node(v));
  return s;
}

// "%3=index, %4=add" (ops) or "%0(x), %2(idx)"; "-" when empty.
inline std::string ref_list(const Graph& g, const std::vector<ValueId>& vs, bool ops) {
  if (vs.empty()) return "-";
  std::string s;
  for (ValueId v : vs) {
    if (!s.empty()) s += ", ";
    s += ops ? op_ref(g, v) : value_ref(g, v);
  }
  return s;
}

}  // namespace tilefuse::schedule_internal
