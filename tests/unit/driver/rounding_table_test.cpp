// One rounding rule (issue 14): the table of tests/common/rounding_table.h,
// every source dtype to every dtype, gives the same bits in the reference
// evaluator (PyTorch eager's rule) and the CPU executor (both plans), and
// the hand-checked PyTorch answers where the two rules of the past differed.
// The same table runs on the GPU in tests/gpu/rounding_table_test.cpp.
#include <gtest/gtest.h>

#include "common/rounding_table.h"
#include "driver/compile.h"
#include "driver/execute.h"
#include "reference/eval.h"

namespace tilefuse {
namespace {

using testing::all_dtypes;
using testing::compare_bits;
using testing::dtype_param_name;
using testing::rounding_graph;
using testing::rounding_input;

class RoundingTable : public ::testing::TestWithParam<DType> {};

TEST_P(RoundingTable, ExecutorMatchesTheReferenceBitForBit) {
  const DType from = GetParam();
  const Tensor x = rounding_input(from);
  const Graph g = rounding_graph(from, x.numel());
  EvalOptions eo;
  eo.num_threads = 1;
  const std::vector<Tensor> want = evaluate(g, {x}, eo);
  for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
    driver::CompileOptions co;
    co.plan = plan;
    const std::vector<Tensor> got = driver::execute(driver::compile(g, co), {x});
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const std::string what = fmt::format("{} -> {} ({} plan)", dtype_name(from),
                                           dtype_name(all_dtypes()[i]), plan_kind_name(plan));
      EXPECT_EQ(compare_bits(x, got[i], want[i], what), "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EverySource, RoundingTable, ::testing::ValuesIn(all_dtypes()),
                         dtype_param_name);

// What PyTorch computes for the values where a single rounding from the
// double (the CPU executor and the CUDA helper before issue 14) and
// PyTorch's rounding through f32 differ, on every engine.
TEST(RoundingTable, PyTorchAnswersOnEveryEngine) {
  struct Case {
    DType from;
    double in;
    DType to;
    double want;
  };
  const Case cases[] = {
      {DType::F64, 1.0 + 0x1p-11 + 0x1p-40, DType::F16, 1.0},  // torch: 1.0
      {DType::F64, 1.0 + 0x1p-8 + 0x1p-40, DType::BF16, 1.0},
      {DType::F64, 1.0625 + 0x1p-40, DType::F8E4M3, 1.0},
      {DType::F64, 0x1p-25 + 0x1p-60, DType::F16, 0.0},
      {DType::I64, 0x1p40 + 0x1p32 + 1, DType::BF16, 0x1p40},
      {DType::F64, 65520.0 - 0x1p-30, DType::F16, std::numeric_limits<double>::infinity()},
      {DType::F64, 1.0 + 0x1p-24 + 0x1p-50, DType::F32, 1.0 + 0x1p-23},  // f32: one rounding
  };
  for (const Case& c : cases) {
    Graph g;
    const ValueId x = g.parameter("x", c.from, {1}, std::nullopt, {});
    g.add_output(g.cast(x, c.to, {}));
    Tensor in = Tensor::empty(c.from, {1});
    in.set_linear(0, c.in);
    ASSERT_EQ(in.get_linear(0), c.in) << "the input is not exact in " << dtype_name(c.from);
    const double ref = evaluate(g, {in})[0].get_linear(0);
    const double cpu = driver::execute(driver::compile(g), {in})[0].get_linear(0);
    EXPECT_EQ(ref, c.want) << std::hexfloat << c.in << " -> " << dtype_name(c.to);
    EXPECT_EQ(cpu, c.want) << std::hexfloat << c.in << " -> " << dtype_name(c.to);
  }
}

}  // namespace
}  // namespace tilefuse
