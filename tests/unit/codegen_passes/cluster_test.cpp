// cluster: a warp-specialized kernel whose TMA copies read the same tiles in
// both blocks of every pair of program ids (2c, 2c + 1) becomes a 2-block
// cluster that multicasts those copies; otherwise a note says why not.
#include <gtest/gtest.h>

#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;
using testing::options;
using testing::with_note;

// The GEMM as the passes before `cluster` leave it, with A's tile issued as
// two boxes (the pass splits a multicast copy's boxes between the blocks).
GemmText two_box_a() {
  GemmText g = testing::wgmma_gemm("hoist_copy_addresses");
  g.a_copy =
      "tma, width=16, map=0, boxes=[({k*64}, {pid_m*128}, smem=0), ({k*64}, {pid_m*128 + 64}, "
      "smem=4096)], bytes=16384";
  return g;
}

// `in` as the pass leaves it where the pairs share A: A's copy multicast,
// a 2-block cluster, and the note.
GemmText with_a_multicast(const GemmText& in) {
  GemmText out = with_note(in,
                           "cluster of 2 blocks (program ids 2c, 2c + 1): A_s shared by TMA "
                           "multicast, each block issuing half of its boxes");
  out.a_copy += ", multicast=1";
  out.launch.insert(out.launch.find(", tensor_maps"), ", cluster=2");
  return out;
}

TEST(Cluster, OptionOffLeavesTheKernel) {
  const GemmText in = two_box_a();
  expect_cuda_pass("cluster", in.text(), in.text());
}

// grid(pid_m: 16, pid_n: 16), the last dim fastest: program ids 2c and
// 2c + 1 are the N tiles 2j, 2j + 1 of one M tile. They read the same A
// boxes at every k (multicast) but different B boxes.
TEST(Cluster, PairsSharingATileMulticastIt) {
  const GemmText in = two_box_a();
  expect_cuda_pass("cluster", in.text(), with_a_multicast(in).text(),
                   options({"cluster_multicast=1"}));
}

// One box cannot be split between two blocks; B differs within each pair.
TEST(Cluster, NoSharedCopyNoCluster) {
  const GemmText in = testing::wgmma_gemm("hoist_copy_addresses");
  expect_cuda_pass("cluster", in.text(),
                   with_note(in,
                             "no cluster: no TMA copy reads the same tiles in both blocks of "
                             "every pair of program ids")
                       .text(),
                   options({"cluster_multicast=1"}));
}

// A row of 16 N tiles per M tile pairs up; with a grid of one row of 3
// tiles (an odd count) it cannot.
TEST(Cluster, OddGridNoCluster) {
  GemmText in = two_box_a();
  std::string text = in.text();
  const std::string from = "grid(pid_m: 16, pid_n: 16)";
  text.replace(text.find(from), from.size(), "grid(pid_m: 3, pid_n: 1)");
  GemmText noted = with_note(in, "no cluster: an odd grid (3 tiles)");
  std::string expected = noted.text();
  expected.replace(expected.find(from), from.size(), "grid(pid_m: 3, pid_n: 1)");
  expect_cuda_pass("cluster", text, expected, options({"cluster_multicast=1"}));
}

// A persistent kernel's blocks take tiles b, b + G, ... with G even, so
// its blocks 2c and 2c + 1 take pairs of tiles in step: it forms the
// cluster as the one-tile-a-block grid does.
TEST(Cluster, PersistentKernelPairsItsTiles) {
  GemmText in = two_box_a();
  in.launch.insert(in.launch.find(", tensor_maps"), ", persistent=1");
  expect_cuda_pass("cluster", in.text(), with_a_multicast(in).text(),
                   options({"cluster_multicast=1"}));
}

// Ping-pong's teams take every other tile of their block: the blocks do not
// take their tiles in pairs.
TEST(Cluster, PingPongNoCluster) {
  GemmText pingpong = two_box_a();
  pingpong.launch.insert(pingpong.launch.find(", tensor_maps"),
                         ", persistent=1, consumer_teams=2");
  // (two teams of the loop's 256 consumer threads and its 128 producers)
  const std::string threads = "threads=384";
  pingpong.launch.replace(pingpong.launch.find(threads), threads.size(), "threads=640");
  expect_cuda_pass(
      "cluster", pingpong.text(),
      with_note(pingpong, "no cluster: ping-pong (each team takes every other tile of its block)")
          .text(),
      options({"cluster_multicast=1"}));
}

}  // namespace
}  // namespace tilefuse::codegen
