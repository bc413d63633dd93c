// Helpers shared by the lowering tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/frontend.h"
#include "lower/lower.h"
#include "schedule/schedule.h"
#include "tir/printer.h"
#include "tir/verifier.h"

namespace tilefuse::testing {

inline Program parse(const std::string& source) {
  return parse_program(source, "test.tfs");
}

// Every kernel of the plan of `kind`, printed one after another.
inline std::string print_plan_kernels(const Graph& g, PlanKind kind) {
  std::string out;
  for (const LoweredKernel& lk : lower_plan(g, build_plan(g, kind))) out += tir::print(lk.kernel);
  return out;
}

// Compares `text` with tests/unit/lower/golden/<name>.tir. Goldens are
// written by tests/unit/lower/update_goldens.sh (TILEFUSE_UPDATE_GOLDENS=1),
// never by hand.
inline void expect_golden(const std::string& name, const std::string& text) {
  const std::string path =
      std::string(TILEFUSE_SOURCE_DIR) + "/tests/unit/lower/golden/" + name + ".tir";
  if (std::getenv("TILEFUSE_UPDATE_GOLDENS")) {
    std::ofstream(path) << text;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing golden " << path << "; run update_goldens.sh\n" << text;
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), text) << "golden " << path << " differs; got:\n" << text;
}

// The lines of `text` from the first one containing `open` to its block's
// closing brace (by indentation).
inline std::string block_of(const std::string& text, const std::string& open) {
  const size_t at = text.find(open);
  if (at == std::string::npos) return "";
  const size_t line_start = text.rfind('\n', at) + 1;
  const size_t indent = at - line_start;
  const std::string close = "\n" + std::string(indent, ' ') + "}\n";
  const size_t end = text.find(close, at);
  return text.substr(
      line_start, end == std::string::npos ? std::string::npos : end + close.size() - line_start);
}

}  // namespace tilefuse::testing
