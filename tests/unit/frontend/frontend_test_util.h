// Helpers shared by the front-end tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "frontend/frontend.h"

namespace tilefuse::testing {

inline Program parse(std::string_view source) {
  return parse_program(source, "test.tfs");
}

inline const Node& output(const Program& p, size_t i = 0) {
  return p.graph.node(p.graph.outputs().at(i));
}

// The nodes of `kind`, in graph order.
inline std::vector<const Node*> nodes_of(const Program& p, OpKind kind) {
  std::vector<const Node*> out;
  for (const Node& n : p.graph.nodes())
    if (n.kind == kind) out.push_back(&n);
  return out;
}

inline Shape shape(std::initializer_list<int64_t> dims) {
  return Shape(dims);
}

// The UserError parsing `source` throws (a test failure when none).
inline UserError error_of(const std::string& source) {
  try {
    parse(source);
  } catch (const UserError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << source;
  return UserError("none");
}

}  // namespace tilefuse::testing
