// Helpers shared by the graph tests.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "graph/graph.h"

namespace tilefuse::testing {

inline constexpr SourceLoc kLoc{3, 7, 2};

// A parameter named p<N> (N = its position) with the given dtype and shape.
inline ValueId param(Graph& g, DType dt, const Shape& shape) {
  std::string name = std::to_string(g.parameters().size());
  name.insert(name.begin(), 'p');
  return g.parameter(name, dt, shape, std::nullopt, {});
}

// Runs `build` (which passes kLoc to the failing builder), expects a UserError at kLoc whose
// message contains `needle`, and returns the message (so a test can also compare it exactly).
inline std::string expect_user_error(const std::function<void()>& build,
                                     const std::string& needle) {
  try {
    build();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << needle;
    EXPECT_EQ(e.loc().line, kLoc.line) << e.what();
    EXPECT_EQ(e.loc().col, kLoc.col) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a UserError containing: " << needle;
  return "";
}

}  // namespace tilefuse::testing
