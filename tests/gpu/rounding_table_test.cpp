// One rounding rule on the device (issue 14): the table of
// tests/common/rounding_table.h, every source dtype to every dtype, compiled
// for the GPU (both plans) and run with CudaProgram, gives the same bits as
// the reference evaluator (PyTorch's rule; the CPU executor is checked
// against it in tests/unit/driver/rounding_table_test.cpp). Skipped without
// a GPU; scripts/gpu_check.sh runs it (test_gpu).
#include <gtest/gtest.h>

#include "common/rounding_table.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "gpu_test_util.h"
#include "reference/eval.h"

namespace tilefuse {
namespace {

using testing::all_dtypes;
using testing::compare_bits;
using testing::dtype_param_name;
using testing::rounding_graph;
using testing::rounding_input;

class GpuRoundingTable : public ::testing::TestWithParam<DType> {};

TEST_P(GpuRoundingTable, DeviceMatchesTheReferenceBitForBit) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  const std::optional<tir::Target> target = gputest::device_target();
  ASSERT_TRUE(target.has_value()) << driver::default_device().arch();
  const DType from = GetParam();
  const Tensor x = rounding_input(from);
  const Graph g = rounding_graph(from, x.numel());
  const std::vector<Tensor> want = evaluate(g, {x});
  for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
    driver::CompileOptions co;
    co.plan = plan;
    co.target = *target;
    const driver::CompiledProgram compiled = driver::compile(g, co);
    driver::CudaProgram program(compiled, driver::default_device());
    const std::vector<Tensor> got = program.run({x}, /*poison=*/true);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const std::string what =
          fmt::format("{} -> {} ({} plan, {})", dtype_name(from), dtype_name(all_dtypes()[i]),
                      plan_kind_name(plan), target->name());
      EXPECT_EQ(compare_bits(x, got[i], want[i], what), "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EverySource, GpuRoundingTable, ::testing::ValuesIn(all_dtypes()),
                         dtype_param_name);

}  // namespace
}  // namespace tilefuse
