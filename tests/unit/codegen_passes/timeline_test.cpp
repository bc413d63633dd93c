// timeline (mark_timeline): with CudaOptions::block_timeline the launch plan
// says block_timeline=1 and a note says so; without it the kernel is
// unchanged.
#include <gtest/gtest.h>

#include <string>

#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;

TEST(Timeline, MarksTheLaunchPlanOnlyWhenAsked) {
  const GemmText in = testing::wgmma_gemm("sync");
  expect_cuda_pass("timeline", in.text(), in.text());
  GemmText out = testing::with_note(
      in, "block timeline: each block records its start, its first stage landed, the end of its "
          "first main loop and its end (%globaltimer) and its SM into tf_timeline (a measuring "
          "aid)");
  // (block_timeline prints after the plan's numbers, before its lists)
  const size_t at = out.launch.find(", tensor_maps=");
  ASSERT_NE(at, std::string::npos) << out.launch;
  out.launch.insert(at, ", block_timeline=1");
  expect_cuda_pass("timeline", in.text(), out.text(), testing::options({"block_timeline=1"}));
}

}  // namespace
}  // namespace tilefuse::codegen
