// Shared by the CUDA backend's pass tests: one pass of the table
// (codegen/cuda/passes/passes.h) on a whole kernel in the text form, its
// output compared line by line with the expected text (pass_test_util.h).
//
// GemmText writes the kernel most tests start from: C = A @ B over one
// block tile (pid_m, pid_n), one pipelined K loop copying both operand
// tiles, then the epilogue nest storing C (as `tilefuse emit --stage=tir-opt
// --dump-after=PASS` prints a plain GEMM, trimmed: no GROUP_M swizzle of the
// program ids, no let of k*BLOCK_K). Each plan clause is a field, so a test
// states what the passes before wrote and what the pass under test adds.
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <string_view>

#include "../passes/pass_test_util.h"
#include "codegen/cuda/passes/passes.h"
#include "tir/target.h"

namespace tilefuse::codegen::testing {

// The options with "NAME=0|1" assignments applied.
inline tir::CudaOptions options(std::initializer_list<const char*> assignments) {
  tir::CudaOptions o;
  for (const char* a : assignments) {
    std::string error;
    EXPECT_TRUE(o.set(a, &error)) << error;
  }
  return o;
}

// The pass `name` of cuda_passes() for `target` with `opts`.
inline passes::testing::KernelPass cuda_pass(std::string_view name, tir::CudaOptions opts = {},
                                             const char* target = "sm_90a") {
  passes::PassContext context{*tir::Target::parse(target), opts};
  for (const passes::PassEntry& e : cuda_passes())
    if (e.name == name) return [run = e.run, context](const tir::Kernel& k) { return run(k, context); };
  ADD_FAILURE() << "no CUDA pass named " << name;
  return [](const tir::Kernel& k) { return k; };
}

// Runs the pass on `input` and expects `expected` (both whole kernels).
inline void expect_cuda_pass(std::string_view pass, const std::string& input,
                             const std::string& expected, tir::CudaOptions opts = {},
                             const char* target = "sm_90a") {
  passes::testing::expect_pass(cuda_pass(pass, opts, target), input, expected);
}

// " plan(clause)", or "" for an empty clause.
inline std::string plan(const std::string& clause) {
  return clause.empty() ? "" : " plan(" + clause + ")";
}

// Every line of `text` indented by two more spaces.
inline std::string indent(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out += "  " + l + "\n";
  return out;
}

struct GemmText {
  std::string dtype = "f16";  // the operands' (x, y, A_s, B_s)
  std::string out = "f16";    // the output's; the accumulator is f32
  int bm = 128, bn = 128, bk = 64, stages = 3, warps = 8;
  // Plan clauses, without `plan(...)`; empty: none.
  std::string launch, a_plan, b_plan, c_plan, loop_plan, a_copy, b_copy, epilogue_plan;
  // Parameters after x and y and before out (each "  name: ...,\n").
  std::string params;
  // Statements before the main loop, after the allocations.
  std::string prologue;
  // The A copy's value (default: the affine tile of x).
  std::string a_value;
  // The epilogue's statement (default: out[..] = C_f[i_2, j_2], cast to `out`).
  std::string store;
  // Fill, main loop and epilogue inside `for t in serial(0, 2)` (a tile
  // loop, as a persistent kernel would have).
  bool tile_loop = false;

  std::string text() const {
    const std::string m = std::to_string(bm), n = std::to_string(bn), k = std::to_string(bk);
    std::ostringstream os;
    os << "kernel gemm(\n"
       << "  x: global readonly " << dtype << "[2048, 2048] strides [2048, 1] align 16,\n"
       << "  y: global readonly " << dtype << "[2048, 2048] strides [2048, 1] align 16,\n"
       << params << "  out: global " << out << "[2048, 2048] strides [2048, 1] align 16,\n"
       << ") grid(pid_m: " << 2048 / bm << ", pid_n: " << 2048 / bn
       << ") attrs(num_warps = " << warps << ")" << plan(launch) << " {\n"
       << "  alloc A_s: shared " << dtype << "[" << m << ", " << k << "]" << plan(a_plan) << "\n"
       << "  alloc B_s: shared " << dtype << "[" << k << ", " << n << "]" << plan(b_plan) << "\n"
       << "  alloc C_f: fragment f32[" << m << ", " << n << "]" << plan(c_plan) << "\n"
       << prologue;
    std::ostringstream tile;
    tile << "fill(C_f, 0.0)\n"
         << "for k in pipelined(0, " << 2048 / bk << ", stages=" << stages << ")"
         << plan(loop_plan) << " {\n"
         << "  copy (i: " << m << ", j: " << k << ") A_s[i, j] = "
         << (a_value.empty() ? "x[pid_m*" + m + " + i, k*" + k + " + j]" : a_value)
         << plan(a_copy) << "\n"
         << "  copy (i_1: " << k << ", j_1: " << n << ") B_s[i_1, j_1] = y[k*" << k
         << " + i_1, pid_n*" << n << " + j_1]" << plan(b_copy) << "\n"
         << "  gemm(A_s, B_s, C_f)\n"
         << "}\n"
         << "for i_2 in parallel(0, " << m << ")" << plan(epilogue_plan) << " {\n"
         << "  for j_2 in parallel(0, " << n << ") {\n"
         << "    "
         << (store.empty() ? "out[pid_m*" + m + " + i_2, pid_n*" + n + " + j_2] = " +
                                 (out == "f32" ? "C_f[i_2, j_2]" : out + "(C_f[i_2, j_2])")
                           : store)
         << "\n  }\n}\n";
    os << indent(tile_loop ? "for t in serial(0, 2) {\n" + indent(tile.str()) + "}\n" : tile.str())
       << "}\n";
    return os.str();
  }
};

}  // namespace tilefuse::codegen::testing
