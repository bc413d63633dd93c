// persistent: a warp-specialized kernel whose blocks take its tiles in
// turn, and ping-pong: two one-warpgroup consumer teams taking alternate
// tiles (LaunchPlan::consumer_teams), with a note either way.
#include <gtest/gtest.h>

#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;
using testing::with_note;

constexpr const char* kPersistentNote =
    "persistent: each block takes tiles block, block + blocks, ...; the producer fills the next "
    "tile's stages while the MMA warpgroups store the last";

// A 128x128 tile on one MMA warpgroup (128 accumulators a thread) and a
// producer warpgroup, both operands by TMA, as hoist_copy_addresses leaves
// it; `attrs` ask for the persistent form.
GemmText one_warpgroup_gemm(const std::string& attrs) {
  GemmText g = testing::wgmma_gemm("hoist_copy_addresses");
  g.warps = 4;
  g.attrs = attrs;
  g.c_plan = "wgmma, operand=f16, block=[128, 128, 64], warps=[1, 1]";
  g.loop_plan =
      "warp_specialized, stages=3, issue_ahead=3, wgmma_in_flight=1, producer_threads=128, "
      "consumer_threads=128";
  g.launch =
      "threads=256, consumer_threads=128, shared_bytes=0, shared_align=128, async_barriers=1, "
      "tensor_maps=[(param=0, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 128], "
      "swizzle=128), (param=1, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 64], "
      "swizzle=128)], notes=[\"warp-specialized\"]";
  g.a_copy = "tma, width=16, map=0, boxes=[({k*64}, {pid_m*128}, smem=0)], bytes=16384";
  return g;
}

GemmText persistent(GemmText g, int teams) {
  g.launch.insert(g.launch.find(", tensor_maps"),
                  teams > 1 ? ", persistent=1, consumer_teams=2" : ", persistent=1");
  if (teams > 1) g.launch.replace(g.launch.find("threads=256"), 11, "threads=384");
  return with_note(g, kPersistentNote);
}

TEST(Persistent, AskedByTheConfig) {
  const GemmText in = one_warpgroup_gemm("PERSISTENT = 1, ");
  expect_cuda_pass("persistent", in.text(), persistent(in, 1).text());
  const GemmText plain = one_warpgroup_gemm("");
  expect_cuda_pass("persistent", plain.text(), plain.text());
}

// Asked by the config of a kernel without a warp-specialized main loop
// (here mma.sync, as on sm_80): unchanged but for a note saying why.
TEST(Persistent, NoWarpSpecializedLoopSaysWhyNot) {
  GemmText in = testing::mma_sync_gemm();
  in.attrs = "PERSISTENT = 1, ";
  expect_cuda_pass("persistent", in.text(),
                   with_note(in,
                             "not persistent: no warp-specialized main loop (the persistent form "
                             "is sm_90a's warp-specialized wgmma kernel's)")
                       .text());
}

// Ping-pong: a second team of the MMA warpgroup's 128 threads before the
// producer (384 threads).
TEST(Persistent, PingPongTakesTwoOneWarpgroupTeams) {
  const GemmText in = one_warpgroup_gemm("PERSISTENT = 1, PINGPONG = 1, ");
  expect_cuda_pass(
      "persistent", in.text(),
      with_note(persistent(in, 2),
                "ping-pong: two teams of 128 MMA threads take the block's tiles in turn, their main "
                "loops one after the other, so that one team's epilogue runs during the other's "
                "main loop")
          .text());
}

// Two teams of two warpgroups would hold 2 x 128 x 256 accumulators: not
// taken, and a note says why (the kernel stays persistent).
TEST(Persistent, PingPongOnlyForOneWarpgroupTeams) {
  GemmText in = testing::wgmma_gemm("hoist_copy_addresses");
  in.attrs = "PERSISTENT = 1, PINGPONG = 1, ";
  expect_cuda_pass(
      "persistent", in.text(),
      with_note(persistent(in, 1),
                "not ping-pong: teams of one MMA warpgroup (the tile's is 256 threads)")
          .text());
}

}  // namespace
}  // namespace tilefuse::codegen
