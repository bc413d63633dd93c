// summarize_block_timeline / format_block_timeline: one launch's block
// records (start, first stage landed, first and second main loops' ends,
// end in ns; SM id) summarized without a GPU; the record's size matches the
// device's.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <vector>

#include "driver/cuda_program.h"
#include "tir/plan.h"

namespace tilefuse::driver {
namespace {

// Five blocks on three SMs, one block without a loop record, one that
// never recorded, one slot past the launch; two blocks ran a second main
// loop (a persistent kernel's second tile).
TEST(BlockTimeline, SummarizesTheLaunchedBlocksRecords) {
  const uint64_t t0 = 1'000'000'000;
  const std::vector<uint64_t> r = {
      // 0: ramp 2, loop 11, after 2 us, no second loop
      t0,
      t0 + 2000,
      t0 + 13000,
      0,
      t0 + 15000,
      7,
      // 1: ramp 1, loop 13, after 12 us, the second loop ends 10 us after the first
      t0 + 100,
      t0 + 1100,
      t0 + 14100,
      t0 + 24100,
      t0 + 26100,
      9,
      // 2: no main loop
      t0 + 200,
      0,
      0,
      0,
      t0 + 5200,
      7,
      // 3: never recorded
      0,
      0,
      0,
      0,
      0,
      0,
      // 4: ramp 3, loop 10, after 1.5 us, the second loop 1 us after the first
      t0 + 50,
      t0 + 3050,
      t0 + 13050,
      t0 + 14050,
      t0 + 14550,
      11,
      // 5: not launched
      t0,
      t0 + 1,
      t0 + 2,
      t0 + 3,
      t0 + 9999999,
      3,
  };
  ASSERT_EQ(r.size() % kBlockTimelineWords, 0u);
  const BlockTimeline t = summarize_block_timeline("gemm0", r, 5);
  EXPECT_EQ(t.kernel, "gemm0");
  EXPECT_EQ(t.launched, 5);
  EXPECT_EQ(t.blocks, 4);
  EXPECT_EQ(t.sms, 3);
  EXPECT_EQ(t.max_blocks_on_an_sm, 2);
  EXPECT_DOUBLE_EQ(t.start_spread_us, 0.2);
  EXPECT_DOUBLE_EQ(t.span_us, 26.1);
  EXPECT_EQ(t.first_stage_blocks, 3);
  EXPECT_DOUBLE_EQ(t.first_stage_us[0], 1.0);
  EXPECT_DOUBLE_EQ(t.first_stage_us[1], 2.0);
  EXPECT_DOUBLE_EQ(t.first_stage_us[2], 3.0);
  EXPECT_EQ(t.loop_blocks, 3);
  EXPECT_DOUBLE_EQ(t.loop_us[0], 10.0);
  EXPECT_DOUBLE_EQ(t.loop_us[1], 11.0);
  EXPECT_DOUBLE_EQ(t.loop_us[2], 13.0);
  EXPECT_DOUBLE_EQ(t.after_loop_us[0], 1.5);
  EXPECT_DOUBLE_EQ(t.after_loop_us[1], 2.0);
  EXPECT_DOUBLE_EQ(t.after_loop_us[2], 12.0);
  EXPECT_DOUBLE_EQ(t.block_us[0], 5.0);
  EXPECT_DOUBLE_EQ(t.block_us[2], 26.0);
  EXPECT_EQ(t.second_loop_blocks, 2);
  EXPECT_DOUBLE_EQ(t.second_loop_us[0], 1.0);
  EXPECT_DOUBLE_EQ(t.second_loop_us[2], 10.0);
  const std::string line = format_block_timeline(t);
  EXPECT_NE(line.find("gemm0: 4 blocks of 5 on 3 SMs (at most 2 an SM), started within 0.20 us"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("start to the first stage landed 1.0 / 2.0 / 3.0 us; then to the first "
                      "main loop's end 10.0 / 11.0 / 13.0 us, then to the block's end 1.5 / 2.0 "
                      "/ 12.0 us; the first main loop's end to the second's 1.0 / "),
            std::string::npos)
      << line;
  EXPECT_NE(line.find(" / 10.0 us (2 blocks)"), std::string::npos) << line;
}

// Without first-stage records (a loop that is not warp-specialized) the
// loop phase runs from the block's start.
TEST(BlockTimeline, LoopFromTheStartWithoutAFirstStageRecord) {
  const std::vector<uint64_t> r = {100, 0, 4100, 0, 5100, 2};
  const BlockTimeline t = summarize_block_timeline("k", r, 1);
  EXPECT_EQ(t.first_stage_blocks, 0);
  EXPECT_EQ(t.loop_blocks, 1);
  EXPECT_DOUBLE_EQ(t.loop_us[0], 4.0);
  EXPECT_EQ(t.second_loop_blocks, 0);
  EXPECT_NE(format_block_timeline(t).find("; start to the first main loop's end 4.0"),
            std::string::npos)
      << format_block_timeline(t);
}

// More launched blocks than records (past tf::kTimelineBlocks), and none
// recorded at all.
TEST(BlockTimeline, RecordsShorterThanTheLaunchAndEmpty) {
  const std::vector<uint64_t> one = {10, 0, 20, 0, 30, 1};
  const BlockTimeline t = summarize_block_timeline("k", one, 100000);
  EXPECT_EQ(t.blocks, 1);
  EXPECT_EQ(t.launched, 100000);
  const BlockTimeline none = summarize_block_timeline("k", std::vector<uint64_t>(12, 0), 2);
  EXPECT_EQ(none.blocks, 0);
  EXPECT_EQ(format_block_timeline(none), "k: no block recorded (of 2 launched)");
}

// The host reads the records the device writes: the same words a block.
TEST(BlockTimeline, RecordSizeMatchesTheDeviceHelper) {
  std::ifstream in(std::string(TILEFUSE_SOURCE_DIR) + "/src/runtime/device/tf_status.cuh");
  ASSERT_TRUE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("constexpr int kTimelineWords = " +
                          std::to_string(kBlockTimelineWords) + ";"),
            std::string::npos);
  // ... and the shared-memory slot the timeline pass places is the device's
  EXPECT_NE(ss.str().find("constexpr int kTimelineSlotBytes = " +
                          std::to_string(tir::LaunchPlan::kTimelineSlotBytes) + ";"),
            std::string::npos);
}

}  // namespace
}  // namespace tilefuse::driver
