// The CPU gemm packing its operands straight from their source
// (passes/pack_gemm_operands.h, copies planned `gemm_pack`): the same bits
// as the staged tiles it replaces, the f64 oracle's values within the
// output's tolerance (gathered rows, negative indices, M / N / K tails,
// several K steps), and an out-of-range index still stopping the program
// with the reference's message (tensor, position, value).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "driver/compile.h"
#include "driver/execute.h"
#include "frontend/frontend.h"
#include "reference/eval.h"
#include "reference/inputs.h"
#include "runtime/cpu/executor.h"
#include "tir/functor.h"
#include "tir/printer.h"

namespace tilefuse {
namespace {

Program parse(const std::string& source) {
  return parse_program(source, "test.tfs");
}

// How many copies of `k` are planned gemm_pack.
int packed_copies(const tir::Kernel& k) {
  struct Count : tir::IRVisitor {
    using IRVisitor::visit;
    int n = 0;
    void visit(const tir::CopyNode* op) override {
      n += op->plan && op->plan->mechanism == tir::CopyMechanism::GemmPack;
      IRVisitor::visit(op);
    }
  } c;
  c.visit_stmt(k.body);
  return c.n;
}

// The program with every gemm_pack copy planned `direct` again: the staged
// tiles the pass replaces.
driver::CompiledProgram staged(driver::CompiledProgram c) {
  struct Unpack : tir::IRMutator {
    using IRMutator::visit;
    tir::Stmt visit(const tir::CopyNode* op) override {
      if (!op->plan || op->plan->mechanism != tir::CopyMechanism::GemmPack)
        return IRMutator::visit(op);
      tir::CopyPlan p = *op->plan;
      p.mechanism = tir::CopyMechanism::Direct;
      return tir::CopyNode::make(op->vars, op->extents, op->dst, op->dst_indices, op->value, p);
    }
  };
  for (driver::CompiledKernel& k : c.kernels) {
    Unpack u;
    k.kernel = u.mutate_kernel(k.kernel);
    EXPECT_EQ(packed_copies(k.kernel), 0);
  }
  return c;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.is_contiguous() &&
         b.is_contiguous() &&
         std::memcmp(a.data_ptr(), b.data_ptr(),
                     static_cast<size_t>(a.numel() * dtype_size(a.dtype()))) == 0;
}

struct Case {
  const char* source;
  int bm = 0, bn = 0, bk = 0;  // 0: the CPU heuristic's config
};

TEST(GemmPack, SameBitsAsTheStagedTilesAndTheOraclesValues) {
  const Case cases[] = {
      // Gathered rows with negative indices; M, N and K tails of the
      // heuristic's 64x64x64 tile.
      {"def f(x: f16[90, 45], y: f16[45, 33], index: i64[70] in [-90, 90)):\n"
       "    return x[index] @ y\n"},
      // The same over several K steps with a K tail (45 = 2*16 + 13), and
      // tiles with M and N tails.
      {"def f(x: f16[90, 45], y: f16[45, 33], index: i64[70] in [-90, 90)):\n"
       "    return x[index] @ y\n",
       32, 16, 16},
      // bf16 with an epilogue; f32 plain operands; f32 accumulate of f16.
      {"def f(x: bf16[40, 70], w: bf16[70, 50], b: bf16[50], i: i32[37] in [0, 40)):\n"
       "    return torch.relu(x[i] @ w + b)\n",
       16, 32, 32},
      {"def f(x: f32[20, 9], w: f32[9, 30]):\n    return x @ w\n"},
      {"def f(x: f16[33, 129], w: f16[129, 65]):\n    return (x @ w).float()\n", 32, 64, 64},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.source) + " config " + std::to_string(c.bm) + "x" +
                 std::to_string(c.bn) + "x" + std::to_string(c.bk));
    const Program p = parse(c.source);
    driver::CompileOptions o;
    if (c.bm) {
      GemmConfig g;
      g.block_m = c.bm, g.block_n = c.bn, g.block_k = c.bk, g.num_stages = 1;
      o.lower.gemm_config = g;
    }
    const driver::CompiledProgram compiled = driver::compile(p.graph, o);
    ASSERT_EQ(compiled.kernels.size(), 1u);
    EXPECT_EQ(packed_copies(compiled.kernels[0].kernel), 2) << tir::print(compiled.kernels[0].kernel);
    for (uint64_t seed : {1, 2}) {
      const std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
      driver::ExecuteOptions x;
      x.poison_outputs = true;
      x.num_threads = 2;
      const int64_t fallbacks = runtime::gemm_pack_fallbacks();
      const std::vector<Tensor> got = driver::execute(compiled, inputs, x);
      EXPECT_EQ(runtime::gemm_pack_fallbacks(), fallbacks) << "a gemm_pack tile was copied";
      const std::vector<Tensor> want = driver::execute(staged(compiled), inputs, x);
      EvalOptions oracle;
      oracle.mode = EvalMode::kOracle;
      const std::vector<Tensor> exact = evaluate(p.graph, inputs, oracle);
      ASSERT_EQ(got.size(), 1u);
      EXPECT_TRUE(same_bits(got[0], want[0])) << "seed " << seed;
      EXPECT_LE(relative_error(got[0], exact[0]), check_tolerance(p.graph, p.graph.outputs()[0]))
          << "seed " << seed;
    }
  }
}

TEST(GemmPack, OutOfRangeIndexNamesTensorPositionAndValue) {
  const Program p = parse(
      "def f(x: f16[90, 45], y: f16[45, 33], index: i64[70] in [0, 90)):\n"
      "    return x[index] @ y\n");
  const driver::CompiledProgram compiled = driver::compile(p.graph);
  ASSERT_EQ(packed_copies(compiled.kernels[0].kernel), 2);
  for (int64_t bad : std::vector<int64_t>{90, -91, int64_t{1} << 40}) {
    std::vector<Tensor> inputs = make_random_inputs(p.graph, 5);
    inputs[2].set_linear(67, static_cast<double>(bad));  // in the M tail's tile
    std::string expected;
    try {
      evaluate(p.graph, inputs);
    } catch (const UserError& e) {
      expected = e.what();
    }
    ASSERT_NE(expected.find("`x`"), std::string::npos) << expected;
    ASSERT_NE(expected.find("[67] = " + std::to_string(bad)), std::string::npos) << expected;
    const int64_t fallbacks = runtime::gemm_pack_fallbacks();
    try {
      driver::execute(compiled, inputs);
      ADD_FAILURE() << "no error for index " << bad;
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), expected);
    }
    EXPECT_EQ(runtime::gemm_pack_fallbacks(), fallbacks);
  }
}

}  // namespace
}  // namespace tilefuse
