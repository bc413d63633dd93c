// split_tail: a warp-specialized wgmma loop's last k-tiles issued N half by
// N half (PipelinePlan::split_tail, the accumulator's FragmentPlan::chains 2),
// where its accumulator's one epilogue is staged per warp.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;
using testing::options;

std::string note(int columns, int tail) {
  return fmt::format(
      "split tail: each MMA warpgroup's {} columns as two m64n{} chains; the last {} k-tiles go N "
      "half 0 first, then N half 1, and the epilogue stores half 0's slabs while half 1's tail "
      "runs on the tensor pipe",
      columns, columns / 2, tail);
}

// GemmText `in` as the pass leaves it with a tail of `tail` k-tiles.
GemmText split(const GemmText& in, int tail) {
  GemmText out = in;
  // (the clause before the mbarriers' offset, in the printer's order)
  out.loop_plan.insert(out.loop_plan.find(", mbarriers="), fmt::format(", split_tail={}", tail));
  out.c_plan += ", chains=2";
  return testing::with_note(out, note(128, tail));
}

// The option: a one-tile kernel (the 128x128x64/3/8 GEMM, 32 k-tiles, two
// warpgroups of 64 x 128) gets a tail of its ring less one, 2 k-tiles; a
// persistent one half its ring (at least 1).
TEST(SplitTail, TheOptionsTailIsTheRingLessOneOrHalfOfItInAPersistentKernel) {
  const GemmText in = testing::wgmma_gemm("epilogue");
  expect_cuda_pass("split_tail", in.text(), split(in, 2).text(), options({"split_tail=1"}));
  GemmText persistent = in;
  persistent.launch.insert(persistent.launch.find(", tensor_maps"), ", persistent=1");
  expect_cuda_pass("split_tail", persistent.text(), split(persistent, 1).text(),
                   options({"split_tail=1"}));
  // Off: nothing changes.
  expect_cuda_pass("split_tail", in.text(), in.text());
}

// The config's SPLIT_TAIL = T asks for T k-tiles, whatever the option.
TEST(SplitTail, TheConfigsTailWins) {
  GemmText in = testing::wgmma_gemm("epilogue");
  in.attrs = "SPLIT_TAIL = 1, ";  // (the option's would be 2)
  expect_cuda_pass("split_tail", in.text(), split(in, 1).text());
  expect_cuda_pass("split_tail", in.text(), split(in, 1).text(), options({"split_tail=1"}));
}

// Asked by the config where it cannot apply: the kernel is unchanged and a
// note says why (with the option alone, nothing is said).
TEST(SplitTail, DeclinedWithAReason) {
  auto declined = [](GemmText in, const std::string& why) {
    in.attrs = "SPLIT_TAIL = 2, ";
    expect_cuda_pass("split_tail", in.text(), testing::with_note(in, "no split tail: " + why).text());
    in.attrs = "";
    expect_cuda_pass("split_tail", in.text(), in.text(), options({"split_tail=1"}));
  };
  // A whole-tile staged epilogue (not per warp).
  GemmText whole = testing::wgmma_gemm("epilogue");
  whole.epilogue_plan = testing::kStagedPlan;
  declined(whole, "the accumulator's epilogue is not staged per warp");
  // One warpgroup across 128 rows (two m64 tiles a warpgroup).
  GemmText tall = testing::wgmma_gemm("epilogue");
  tall.c_plan = "wgmma, operand=f16, block=[128, 128, 64], warps=[1, 1]";
  declined(tall,
           "the accumulator is not a wgmma tile of 64 rows a warpgroup with N halves of 64 columns "
           "or more");
  // A tail as long as the ring: its last k-tile's stage would be refilled
  // only after the stage before the tail goes back, which waits for it (a
  // one-tile kernel hung so on the H100, session 44).
  GemmText ring = testing::wgmma_gemm("epilogue");
  ring.attrs = "SPLIT_TAIL = 3, ";
  expect_cuda_pass("split_tail", ring.text(),
                   testing::with_note(ring, "no split tail: a tail of 3 k-tiles in a ring of 3 "
                                            "stages (at most 2: the tail's last stage is refilled "
                                            "only once the stage before the tail is released)")
                       .text());
  // A tail as long as the loop.
  GemmText in = testing::wgmma_gemm("epilogue");
  in.attrs = "SPLIT_TAIL = 32, ";
  expect_cuda_pass("split_tail", in.text(),
                   testing::with_note(in, "no split tail: a tail of 32 k-tiles in a loop of 32")
                       .text());
}

}  // namespace
}  // namespace tilefuse::codegen
