// Shared by the pass tests: text in -> pass -> text out, with a failure
// message that shows the input, the output and the expected text.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "tir/parser.h"
#include "tir/printer.h"
#include "tir/verifier.h"

namespace tilefuse::passes::testing {

using KernelPass = std::function<tir::Kernel(const tir::Kernel&)>;

// The kernel text around `body` (two-space indented statements): scalar
// params n (i32), m64 (i64); inputs x (f32[256]), idx (i32[256]); outputs
// out (f32[256]), iout (i32[256]); grid p over 4 programs.
inline std::string kernel_text(const std::string& body) {
  return "kernel k(\n  n: i32,\n  m64: i64,\n  x: global readonly f32[256],\n"
         "  idx: global readonly i32[256],\n  out: global f32[256],\n"
         "  iout: global i32[256],\n) grid(p: 4) {\n" +
         body + "}\n";
}

// The first line where `a` and `b` differ, as "line N:\n  got:      ...\n
// expected: ..." ("" when they are equal).
inline std::string first_difference(const std::string& got, const std::string& expected) {
  size_t line = 1, g = 0, e = 0;
  while (g < got.size() || e < expected.size()) {
    size_t ge = std::min(got.find('\n', g), got.size());
    size_t ee = std::min(expected.find('\n', e), expected.size());
    std::string gl = got.substr(g, ge - g), el = expected.substr(e, ee - e);
    if (gl != el || (ge == got.size()) != (ee == expected.size()))
      return "line " + std::to_string(line) + ":\n  got:      " + gl + "\n  expected: " + el + "\n";
    g = ge + 1, e = ee + 1, ++line;
  }
  return "";
}

// Parses `input` (a whole kernel), checks it verifies, runs `pass`, checks
// the result verifies and prints exactly as `expected` (compared line by
// line: a failure shows the input, the output, the expected text and the
// first line that differs).
inline void expect_pass(const KernelPass& pass, const std::string& input,
                        const std::string& expected) {
  tir::Kernel in = tir::parse_kernel(input);
  ASSERT_EQ(tir::verify_errors(in), std::vector<std::string>{}) << input;
  tir::Kernel out = pass(in);
  std::string printed = tir::print(out);
  EXPECT_EQ(printed, expected) << "--- input:\n"
                               << input << "--- output:\n"
                               << printed << "--- expected:\n"
                               << expected << "--- first difference, "
                               << first_difference(printed, expected);
  EXPECT_EQ(tir::verify_errors(out), std::vector<std::string>{}) << printed;
}

// The same for kernel bodies wrapped by kernel_text.
inline void expect_body(const KernelPass& pass, const std::string& body,
                        const std::string& expected_body) {
  expect_pass(pass, kernel_text(body), kernel_text(expected_body));
}

}  // namespace tilefuse::passes::testing
