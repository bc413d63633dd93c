// producer_start: a warp-specialized producer loads its gathered rows'
// index itself, its mbarriers are set up at the entry, and the affine
// operand's first stages go out before the index load returns.
#include <gtest/gtest.h>

#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;
using testing::options;

using testing::hoisted_gather;

std::string note(const std::string& forwarded, const std::string& lead) {
  return "producer start: the mbarriers are set up at the kernel's entry and the producer does "
         "not wait for the statements before the main loop" +
         (forwarded.empty() ? std::string()
                            : "; it loads the rows it gathers itself (" + forwarded +
                                  " forwarded from shared memory into its hoisted addresses)") +
         lead;
}

TEST(ProducerStart, ForwardsTheStagedRowsAndLeadsWithTheAffineStages) {
  const GemmText in = hoisted_gather();
  GemmText out = in;
  out.allocs = "";
  out.prologue = "";  // the staging copy and its barrier
  out.a_value = "x[index[pid_m*128 + i], k*64 + j]";
  out.a_copy =
      "cp_async, width=16, cache_all=1, hoist=(indices=[{index[pid_m*128 + i]}, {j}], step=64)";
  out.loop_plan += ", setup_at_entry=1, affine_lead=3";
  // (grid 16 x 16: the first 128 blocks are pid_m 0..7 over 16 B tiles)
  out = testing::with_note(
      out, note("index_rows",
                "; it issues the TMA copies of the first 3 of 3 stages before its gathered "
                "rows' addresses, whose index load then overlaps those bytes (the first 128 "
                "blocks read 16 distinct affine tiles, 256 KiB a stage; at most 4 MiB ahead of "
                "the index load)"));
  expect_cuda_pass("producer_start", in.text(), out.text());
}

// Where each of the first blocks reads an affine tile of its own (a small-M
// GEMM's weights), the lead's bytes come from DRAM ahead of the first
// gathered stage: only as many stages as keep them within 4 MiB (128 tiles
// of 16 KiB: 2 of the 3).
TEST(ProducerStart, ALeadOfFewerStagesWhereEachBlockReadsItsOwnAffineTiles) {
  GemmText in = hoisted_gather();
  const std::string own = "pid_m*2048 + pid_n*128";
  for (size_t at; (at = in.b_copy.find("{pid_n*128")) != std::string::npos;)
    in.b_copy.replace(at + 1, 9, own);
  GemmText out = in;
  out.allocs = "";
  out.prologue = "";
  out.a_value = "x[index[pid_m*128 + i], k*64 + j]";
  out.a_copy =
      "cp_async, width=16, cache_all=1, hoist=(indices=[{index[pid_m*128 + i]}, {j}], step=64)";
  out.loop_plan += ", setup_at_entry=1, affine_lead=2";
  out = testing::with_note(
      out, note("index_rows",
                "; it issues the TMA copies of the first 2 of 3 stages before its gathered "
                "rows' addresses, whose index load then overlaps those bytes (the first 128 "
                "blocks read 128 distinct affine tiles, 2048 KiB a stage; at most 4 MiB ahead "
                "of the index load)"));
  expect_cuda_pass("producer_start", in.text(), out.text());
}

// A staged buffer that something else reads stays (and so does its
// barrier: the set-up stays at the loop); so does one whose source the
// kernel writes.
TEST(ProducerStart, KeepsRowsReadElsewhereOrFromWrittenMemory) {
  GemmText in = hoisted_gather();
  in.store = "out[pid_m*128 + i_2, pid_n*128 + j_2] = f16(C_f[i_2, j_2] + f32(index_rows[i_2]))";
  expect_cuda_pass("producer_start", in.text(), in.text());
  GemmText written = hoisted_gather();
  written.params = "  index: global i64[2048] strides [1] align 16,\n";
  written.after = "index[pid_m] = 0_i64\n";
  expect_cuda_pass("producer_start", written.text(), written.text());
}

// Nothing with the option off, in a persistent kernel (its producer
// prefetches the next tile's index instead) or without a warp-specialized
// loop.
TEST(ProducerStart, OnlyANonPersistentWarpSpecializedLoop) {
  const GemmText in = hoisted_gather();
  expect_cuda_pass("producer_start", in.text(), in.text(), options({"producer_start=0"}));
  GemmText persistent = in;
  persistent.launch.insert(persistent.launch.find(", tensor_maps"), ", persistent=1");
  expect_cuda_pass("producer_start", persistent.text(), persistent.text());
  GemmText ring = in;
  ring.launch = "threads=256, shared_bytes=0, shared_align=128, async_barriers=1";
  ring.loop_plan = "wgmma_async, stages=3, issue_ahead=2";
  ring.a_copy = "cp_async, width=16, cache_all=1";
  ring.b_copy = "cp_async, width=16";
  expect_cuda_pass("producer_start", ring.text(), ring.text());
}

}  // namespace
}  // namespace tilefuse::codegen
