// launch_blocks: a kernel's grid at a call's sizes checked against what a
// launch allows, without a GPU (CudaProgram calls it for every kernel
// before the first launch of a call, so a grid no launch can take is an
// error with nothing run).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "driver/cuda_program.h"

namespace tilefuse::driver {
namespace {

constexpr int64_t kMax = 2147483647;  // CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X

std::string refusal(const std::vector<int64_t>& extents, int64_t max_blocks = kMax) {
  try {
    launch_blocks("gemm1", extents, max_blocks);
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(LaunchBlocks, TheProductOfTheExtents) {
  EXPECT_EQ(launch_blocks("k", {}, kMax), 1);
  EXPECT_EQ(launch_blocks("k", {7}, kMax), 7);
  EXPECT_EQ(launch_blocks("k", {3, 5, 2}, kMax), 30);
  EXPECT_EQ(launch_blocks("k", {kMax}, kMax), kMax);
  EXPECT_EQ(launch_blocks("k", {65536, 32767}, kMax), int64_t{65536} * 32767);
}

// An empty grid launches nothing, even where the other extents are huge.
TEST(LaunchBlocks, AnEmptyGridIsNoBlocks) {
  EXPECT_EQ(launch_blocks("k", {0}, kMax), 0);
  EXPECT_EQ(launch_blocks("k", {int64_t{1} << 40, 0, int64_t{1} << 40}, kMax), 0);
  EXPECT_EQ(launch_blocks("k", {5, -1}, kMax), 0);
}

TEST(LaunchBlocks, OverTheLimitNamesTheKernelAndTheGrid) {
  EXPECT_EQ(refusal({65536, 32768}),
            "kernel gemm1 needs a grid of 65536 x 32768 = 2147483648 blocks at these sizes, more "
            "than a launch allows (at most 2147483647 blocks); nothing was launched");
  EXPECT_EQ(refusal({kMax + 1}),
            "kernel gemm1 needs a grid of 2147483648 = 2147483648 blocks at these sizes, more "
            "than a launch allows (at most 2147483647 blocks); nothing was launched");
  // The device's limit, whatever it is.
  EXPECT_EQ(launch_blocks("k", {1000}, 1000), 1000);
  EXPECT_NE(refusal({1001}, 1000).find("at most 1000 blocks"), std::string::npos);
}

// A product past int64 is refused too, not wrapped into a small count.
TEST(LaunchBlocks, AProductPastInt64IsRefused) {
  const int64_t big = int64_t{1} << 32;
  EXPECT_EQ(refusal({big, big, 4}),
            "kernel gemm1 needs a grid of 4294967296 x 4294967296 x 4 = over 2^63 blocks at "
            "these sizes, more than a launch allows (at most 2147483647 blocks); nothing was "
            "launched");
}

// `tilefuse run -v` and bench's kernel lines: a persistent kernel says how
// many blocks it launches over how many tiles, not its tiles as its grid.
TEST(LaunchShapeText, PersistentKernelsSayTheirBlocksAndTiles) {
  CudaKernelStats st;
  st.threads = 384;
  st.blocks = 512;
  EXPECT_EQ(launch_shape_text(st), "384 threads x 512 blocks");
  st.persistent_blocks = 132;
  EXPECT_EQ(launch_shape_text(st), "384 threads x 132 persistent blocks over 512 tiles");
  st.persistent_blocks = 0;
  st.blocks = -1;
  EXPECT_EQ(launch_shape_text(st), "384 threads x a grid set at launch");
}

}  // namespace
}  // namespace tilefuse::driver
