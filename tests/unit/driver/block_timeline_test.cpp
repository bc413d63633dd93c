// summarize_block_timeline / format_block_timeline: one launch's block
// records (start, first main loop's end, end in ns; SM id) summarized
// without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "driver/cuda_program.h"

namespace tilefuse::driver {
namespace {

// Four blocks on three SMs, one block without a loop record, one slot past
// the launch and one block that never recorded.
TEST(BlockTimeline, SummarizesTheLaunchedBlocksRecords) {
  const uint64_t t0 = 1'000'000'000;
  std::vector<uint64_t> r = {
      t0,        t0 + 13000, t0 + 15000, 7,   // block 0: loop 13 us, after 2 us
      t0 + 100,  t0 + 14100, t0 + 26100, 9,   // block 1: loop 14 us, after 12 us (a fix-up)
      t0 + 200,  0,          t0 + 5200,  7,   // block 2: no main loop
      0,         0,          0,          0,   // block 3: never recorded
      t0 + 50,   t0 + 13050, t0 + 14550, 11,  // block 4: loop 13 us, after 1.5 us
      t0,        t0 + 1,     t0 + 999999, 3,  // block 5: not launched
  };
  const BlockTimeline t = summarize_block_timeline("gemm0", r, 5);
  EXPECT_EQ(t.kernel, "gemm0");
  EXPECT_EQ(t.launched, 5);
  EXPECT_EQ(t.blocks, 4);
  EXPECT_EQ(t.sms, 3);
  EXPECT_EQ(t.max_blocks_on_an_sm, 2);
  EXPECT_DOUBLE_EQ(t.start_spread_us, 0.2);
  EXPECT_DOUBLE_EQ(t.span_us, 26.1);
  EXPECT_EQ(t.loop_blocks, 3);
  EXPECT_DOUBLE_EQ(t.loop_us[0], 13.0);
  EXPECT_DOUBLE_EQ(t.loop_us[1], 13.0);
  EXPECT_DOUBLE_EQ(t.loop_us[2], 14.0);
  EXPECT_DOUBLE_EQ(t.after_loop_us[0], 1.5);
  EXPECT_DOUBLE_EQ(t.after_loop_us[1], 2.0);
  EXPECT_DOUBLE_EQ(t.after_loop_us[2], 12.0);
  EXPECT_DOUBLE_EQ(t.block_us[0], 5.0);
  EXPECT_DOUBLE_EQ(t.block_us[2], 26.0);
  const std::string line = format_block_timeline(t);
  EXPECT_NE(line.find("gemm0: 4 blocks of 5 on 3 SMs (at most 2 an SM), started within 0.20 us"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("then to the block's end 1.5 / 2.0 / 12.0 us"), std::string::npos) << line;
}

// More launched blocks than records (past tf::kTimelineBlocks), and none
// recorded at all.
TEST(BlockTimeline, RecordsShorterThanTheLaunchAndEmpty) {
  const std::vector<uint64_t> one = {10, 20, 30, 1};
  const BlockTimeline t = summarize_block_timeline("k", one, 100000);
  EXPECT_EQ(t.blocks, 1);
  EXPECT_EQ(t.launched, 100000);
  const BlockTimeline none = summarize_block_timeline("k", std::vector<uint64_t>(8, 0), 2);
  EXPECT_EQ(none.blocks, 0);
  EXPECT_EQ(format_block_timeline(none), "k: no block recorded (of 2 launched)");
}

}  // namespace
}  // namespace tilefuse::driver
