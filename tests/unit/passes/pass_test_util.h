// Shared by the pass tests: text in -> pass -> text out, with a failure
// message that shows the input, the output and the expected text.
#pragma once

#include <gtest/gtest.h>

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

// Parses `input` (a whole kernel), checks it verifies, runs `pass`, checks
// the result verifies and prints exactly as `expected`.
inline void expect_pass(const KernelPass& pass, const std::string& input,
                        const std::string& expected) {
  tir::Kernel in = tir::parse_kernel(input);
  ASSERT_EQ(tir::verify_errors(in), std::vector<std::string>{}) << input;
  tir::Kernel out = pass(in);
  std::string printed = tir::print(out);
  EXPECT_EQ(printed, expected) << "--- input:\n"
                               << input << "--- output:\n"
                               << printed << "--- expected:\n"
                               << expected;
  EXPECT_EQ(tir::verify_errors(out), std::vector<std::string>{}) << printed;
}

// The same for kernel bodies wrapped by kernel_text.
inline void expect_body(const KernelPass& pass, const std::string& body,
                        const std::string& expected_body) {
  expect_pass(pass, kernel_text(body), kernel_text(expected_body));
}

}  // namespace tilefuse::passes::testing
