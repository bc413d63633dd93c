// layout: every shared buffer's ring depth, offset and bytes, the mbarriers
// of a warp-specialized loop, the kernel's shared bytes and base alignment.
#include <gtest/gtest.h>

#include "core/error.h"
#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;

// The wgmma tiles get the loop's 3 stages (48 KiB each), the 6 mbarriers
// (full and empty per stage) follow them; the base is 1024-byte aligned.
TEST(Layout, WarpSpecializedGemm) {
  GemmText in = testing::wgmma_gemm("register_budgets"), out = in;
  out.a_plan = "swizzled, stages=3, offset=0, bytes=49152";
  out.b_plan = "mn_swizzled, stages=3, offset=49152, bytes=49152";
  out.loop_plan += ", mbarriers=98304";
  out.launch.replace(out.launch.find("shared_bytes=0, shared_align=128"), 32,
                     "shared_bytes=98352, shared_align=1024");
  EXPECT_EQ(out.text(), testing::wgmma_gemm("layout").text());
  expect_cuda_pass("layout", in.text(), out.text());
}

// A wgmma tile after a 128-byte buffer starts at the next 1024 bytes (the
// 128-byte swizzle is a function of address bits [4, 10)); a buffer no
// pipelined loop fills has one stage; the mbarriers follow every buffer.
TEST(Layout, WgmmaTilesAre1024ByteAligned) {
  GemmText in = testing::wgmma_gemm("register_budgets");
  in.params = testing::kIndexParam;
  in.allocs = "  alloc flags: shared bool[128]\n";
  in.prologue = testing::index_rows("") + "  barrier()\n";
  GemmText out = in;
  out.allocs = "  alloc flags: shared bool[128] plan(row_major, stages=1, offset=0, bytes=128)\n";
  out.a_plan = "swizzled, stages=3, offset=1024, bytes=49152";
  out.b_plan = "mn_swizzled, stages=3, offset=50176, bytes=49152";
  out.prologue =
      testing::index_rows("row_major, stages=1, offset=99328, bytes=1024") + "  barrier()\n";
  out.loop_plan += ", mbarriers=100352";
  out.launch.replace(out.launch.find("shared_bytes=0, shared_align=128"), 32,
                     "shared_bytes=100400, shared_align=1024");
  expect_cuda_pass("layout", in.text(), out.text());
}

// mma.sync tiles: 128-byte alignment; the ring's tiles get its stages, an
// in-order loop's one.
TEST(Layout, RingDepthsAndOffsetsOfMmaSyncTiles) {
  GemmText in = testing::mma_sync_gemm();
  in.allocs = "  alloc flags: shared bool[128]\n";
  in.loop_plan = "ring, stages=3, issue_ahead=2";
  GemmText out = in;
  out.allocs = "  alloc flags: shared bool[128] plan(row_major, stages=1, offset=0, bytes=128)\n";
  out.a_plan = "swizzled, stages=3, offset=128, bytes=24576";
  out.b_plan = "swizzled, stages=3, offset=24704, bytes=24576";
  out.launch = "threads=256, shared_bytes=49280, shared_align=128";
  expect_cuda_pass("layout", in.text(), out.text(), {}, "sm_80");

  in.loop_plan = "in_order, stages=1, issue_ahead=0, why=\"one stage\"";
  out.loop_plan = in.loop_plan;
  out.a_plan = "swizzled, stages=1, offset=128, bytes=8192";
  out.b_plan = "swizzled, stages=1, offset=8320, bytes=8192";
  out.launch = "threads=256, shared_bytes=16512, shared_align=128";
  expect_cuda_pass("layout", in.text(), out.text(), {}, "sm_80");
}

TEST(Layout, NeedsAPipelinePlanOnEveryPipelinedLoop) {
  GemmText in = testing::wgmma_gemm("lower_copies");
  in.loop_plan = "";
  in.launch = "threads=256, shared_bytes=0, shared_align=128, async_barriers=1";
  in.a_copy = in.b_copy = "cp_async, width=16";
  EXPECT_THROW(testing::cuda_pass("layout")(tir::parse_kernel(in.text())), InternalError);
}

}  // namespace
}  // namespace tilefuse::codegen
