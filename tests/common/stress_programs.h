// The stress corpus of issue 14: .tfs programs that are large or deep in
// every way a program can be (long chains of statements, long lines, many
// parameters, many outputs, deep gather chains, heavy reuse of a value at
// every level, deep view chains, nested activations, nested parentheses),
// generated at any size. The end-to-end stress tests run every CLI command
// on them within a time and memory budget (tests/e2e/stress_test.cpp); the
// compile-scaling test measures how compile time and IR size grow with the
// size (tests/unit/driver/scaling_test.cpp).
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

namespace tilefuse::testing {

// `y{i+1} = y{i} * 1.0001 + 0.5`, n times, after a GEMM (gemm = true: the
// chain is the GEMM's epilogue) or on a parameter (a pointwise chain).
inline std::string chain_program(int n, bool gemm = true) {
  std::string s = "def chain(x: f32[4, 8], w: f32[8, 3]):\n";
  s += gemm ? "    y0 = x @ w\n" : "    y0 = x\n";
  for (int i = 0; i < n; ++i) s += fmt::format("    y{} = y{} * 1.0001 + 0.5\n", i + 1, i);
  s += fmt::format("    return y{}\n", n);
  return s;
}

// One line of n terms: `x @ w + 0.0 + 0.0 + ...`.
inline std::string long_line_program(int n) {
  std::string s = "def line(x: f32[4, 8], w: f32[8, 3]):\n    return x @ w";
  s.reserve(s.size() + 6 * static_cast<size_t>(n) + 2);
  for (int i = 0; i < n; ++i) s += " + 0.0";
  return s + "\n";
}

// `x @ w + x @ w + ...`, n products on one line.
inline std::string repeated_gemm_program(int n) {
  std::string s = "def rep(x: f32[4, 8], w: f32[8, 3]):\n    return x @ w";
  for (int i = 1; i < n; ++i) s += " + x @ w";
  return s + "\n";
}

// n pairs of parameters whose GEMMs are summed: x0 @ w0 + x1 @ w1 + ...
inline std::string many_params_program(int n) {
  std::string s = "def params(";
  for (int i = 0; i < n; ++i)
    s += fmt::format("{}x{}: f32[2, 3], w{}: f32[3, 2]", i ? ", " : "", i, i);
  s += "):\n    return ";
  for (int i = 0; i < n; ++i) s += fmt::format("{}x{} @ w{}", i ? " + " : "", i, i);
  return s + "\n";
}

// x[i][i]...[i] (n gathers) @ w.
inline std::string gather_chain_program(int n) {
  std::string s = "def gathers(x: f32[16, 16], w: f32[16, 4], i: i64[16]):\n    return x";
  for (int k = 0; k < n; ++k) s += "[i]";
  return s + " @ w\n";
}

// `y = y * y` n times in a GEMM epilogue (gemm = true) or a prologue; the
// values stay in (0, 1] (a square of a sigmoid), so the result is finite.
inline std::string square_chain_program(int n, bool epilogue = true) {
  std::string s = "def squares(x: f32[4, 8], w: f32[8, 3]):\n";
  s += epilogue ? "    y = torch.sigmoid(x @ w)\n" : "    y = torch.sigmoid(x)\n";
  for (int i = 0; i < n; ++i) s += "    y = y * y\n";
  s += epilogue ? "    return y\n" : "    return y @ w\n";
  return s;
}

// n outputs, each a value of a shared GEMM result.
inline std::string many_outputs_program(int n) {
  std::string s = "def outs(x: f32[2, 3], w: f32[3, 2]):\n    y = x @ w\n";
  for (int i = 0; i < n; ++i) s += fmt::format("    y{} = y + {}\n", i, i);
  s += "    return ";
  for (int i = 0; i < n; ++i) s += fmt::format("{}y{}", i ? ", " : "", i);
  return s + "\n";
}

// The same GEMM result returned n times: `return y, y, ..., y` (its outputs
// are named y, y_1, ..., y_{n-1}).
inline std::string repeated_output_program(int n) {
  std::string s = "def same(x: f32[2, 3], w: f32[3, 2]):\n    y = x @ w\n    return y";
  for (int i = 1; i < n; ++i) s += ", y";
  return s + "\n";
}

// n parameters, each with a symbolic dim of its own (`p{i}: f32[S{i}]`), beside
// a GEMM.
inline std::string many_symbols_program(int n) {
  std::string s = "def symbols(";
  for (int i = 0; i < n; ++i) s += fmt::format("p{}: f32[S{}], ", i, i);
  return s + "x: f32[2, 3], w: f32[3, 2]):\n    return x @ w\n";
}

// n transposes x.T.T...T and n slices x[0:][0:]... feeding a GEMM.
inline std::string view_chain_program(int n) {
  std::string s = "def views(x: f32[16, 16], w: f32[16, 4]):\n    a = x";
  for (int k = 0; k < n; ++k) s += ".T";
  s += "\n    b = x";
  for (int k = 0; k < n; ++k) s += "[0:]";
  return s + "\n    return (a + b) @ w\n";
}

// gelu(relu(clamp(...))) nested n times around a GEMM operand and result.
inline std::string nested_activation_program(int n) {
  std::string s = "def acts(x: f32[8, 8], w: f32[8, 4]):\n    h = x\n";
  for (int k = 0; k < n; ++k) s += "    h = torch.nn.functional.gelu(torch.relu(h).clamp(-1, 1))\n";
  s += "    y = h @ w\n";
  for (int k = 0; k < n; ++k) s += "    y = torch.nn.functional.gelu(torch.relu(y).clamp(-1, 1))\n";
  return s + "    return y\n";
}

// An expression nested `depth` parentheses deep (the parser allows 256).
inline std::string nested_parens_program(int depth) {
  std::string s = "def parens(x: f32[4, 8], w: f32[8, 3]):\n    return ";
  for (int k = 0; k < depth; ++k) s += "(";
  s += "x @ w";
  for (int k = 0; k < depth; ++k) s += " + 1.0)";
  return s + "\n";
}

struct StressProgram {
  std::string name;
  std::string source;
};

// The corpus at a size (`scale` 1: what CI runs in a few seconds a command;
// larger scales multiply every count).
inline std::vector<StressProgram> stress_corpus(int scale = 1) {
  return {
      {"chain_epilogue", chain_program(2000 * scale)},
      {"chain_pointwise", chain_program(2000 * scale, false)},
      {"long_line", long_line_program(20000 * scale)},
      {"repeated_gemm", repeated_gemm_program(2000 * scale)},
      {"many_params", many_params_program(500 * scale)},
      {"gather_chain", gather_chain_program(300 * scale)},
      {"square_chain_epilogue", square_chain_program(500 * scale)},
      {"square_chain_prologue", square_chain_program(500 * scale, false)},
      {"many_outputs", many_outputs_program(2000 * scale)},
      {"view_chain", view_chain_program(5000 * scale)},
      {"nested_activations", nested_activation_program(100 * scale)},
      {"nested_parens", nested_parens_program(250)},
  };
}

}  // namespace tilefuse::testing
