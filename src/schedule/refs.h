// How the schedule's texts (the plan printer, fusion decisions, validator
// messages) name values and nodes; shared so that all of them agree. Not part
// of the module's API.
#pragma once

#include <string>

#include "graph/graph.h"

namespace tilefuse::schedule_internal {

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
