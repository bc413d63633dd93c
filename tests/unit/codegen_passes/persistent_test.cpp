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

// The roles' ring counts over the block's tiles are ints: they fold
// (LaunchPlan::ring_fold_at) at 2^30 where one block taking every tile
// could run that many ring iterations, here 2^25 tiles of 32 k-tiles (the
// pass reads only the grid and the trip count), or where the trip count is
// not a constant; not at 2^30 - 32 x 8192 (a kernel of a constant trip
// below it keeps its source). With ring_fold_every_tile every persistent kernel folds
// after each tile, ping-pong's too.
GemmText with_ring_fold(GemmText g, int64_t at, const std::string& note) {
  g.launch.insert(g.launch.find(", tensor_maps"), ", ring_fold_at=" + std::to_string(at));
  return with_note(g, note);
}

std::string with_grid(std::string text, const std::string& grid) {
  return text.replace(text.find("grid(pid_m: 16, pid_n: 16)"), 26, grid);
}

TEST(Persistent, RingCountFoldsWhereItCouldPass2To30) {
  const GemmText in = one_warpgroup_gemm("PERSISTENT = 1, ");
  const std::string big = "grid(pid_m: 8192, pid_n: 4096)";
  expect_cuda_pass("persistent", with_grid(in.text(), big),
                   with_grid(with_ring_fold(persistent(in, 1), int64_t{1} << 30,
                                            "the ring count folds every tile once past 2^30: the "
                                            "block may run 1073741824 ring iterations")
                                 .text(),
                             big));
  const std::string below = "grid(pid_m: 8192, pid_n: 4095)";
  expect_cuda_pass("persistent", with_grid(in.text(), below),
                   with_grid(persistent(in, 1).text(), below));
  // K tiles counted by a parameter: unbounded.
  GemmText symbolic = in;
  symbolic.params = "  k_tiles: i32,\n";
  auto symbolic_k = [](std::string text) {
    return text.replace(text.find("pipelined(0, 32,"), 16, "pipelined(0, k_tiles,");
  };
  expect_cuda_pass("persistent", symbolic_k(symbolic.text()),
                   symbolic_k(with_ring_fold(persistent(symbolic, 1), int64_t{1} << 30,
                                             "the ring count folds every tile once past 2^30: a "
                                             "trip count that is not a constant")
                                  .text()));
}

TEST(Persistent, RingFoldEveryTileIsATestingAid) {
  const char* const note =
      "the ring count folds after every tile (the ring_fold_every_tile option, a testing aid)";
  const tir::CudaOptions every = testing::options({"ring_fold_every_tile=1"});
  const GemmText in = one_warpgroup_gemm("PERSISTENT = 1, ");
  expect_cuda_pass("persistent", in.text(), with_ring_fold(persistent(in, 1), 1, note).text(),
                   every);
  const GemmText pingpong = one_warpgroup_gemm("PERSISTENT = 1, PINGPONG = 1, ");
  expect_cuda_pass(
      "persistent", pingpong.text(),
      with_note(
          with_ring_fold(persistent(pingpong, 2), 1, note),
          "ping-pong: two teams of 128 MMA threads take the block's tiles in turn, their main "
          "loops one after the other, so that one team's epilogue runs during the other's "
          "main loop")
          .text(),
      every);
  // (not a persistent kernel: nothing)
  const GemmText plain = one_warpgroup_gemm("");
  expect_cuda_pass("persistent", plain.text(), plain.text(), every);
}

}  // namespace
}  // namespace tilefuse::codegen
