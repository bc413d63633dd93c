// hoist_copy_addresses: a warp-specialized producer's gathered cp.async
// rows get their addresses computed once, before the loop.
#include <gtest/gtest.h>

#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;
using testing::options;

// The gathered row (a shared load) is invariant in k; the address moves by
// BLOCK_K elements a step.
TEST(HoistCopyAddresses, GatheredRowsOfTheProducer) {
  GemmText in = testing::gathered_gemm(), out = in;
  out.a_copy =
      "cp_async, width=16, cache_all=1, hoist=(indices=[{index_rows[i]}, {j}], step=64, "
      "l1_by_repeats=1)";
  expect_cuda_pass("hoist_copy_addresses", in.text(), out.text());
  // The mask: its invariant conjuncts once, those that vary with k (a K
  // tail) each iteration.
  in.a_value =
      "load(x, [index_rows[i], k*64 + j], mask=(k*64 + j < 2000 && index_rows[i] >= 0_i64))";
  out = in;
  out.a_copy =
      "cp_async, width=16, cache_all=1, hoist=(indices=[{index_rows[i]}, {j}], step=64, "
      "mask={index_rows[i] >= 0_i64}, iteration_mask={k*64 + j < 2000}, l1_by_repeats=1)";
  expect_cuda_pass("hoist_copy_addresses", in.text(), out.text());
}

// gather_cache_by_repeats (on by default): a hoisted gather through L1
// takes its cache level per tile from its repeated rows (l1_by_repeats); a
// .cg copy has no level to choose, and the option off keeps .ca.
TEST(HoistCopyAddresses, CacheLevelByRepeatsOnlyThroughL1) {
  GemmText in = testing::gathered_gemm(), out = in;
  out.a_copy =
      "cp_async, width=16, cache_all=1, hoist=(indices=[{index_rows[i]}, {j}], step=64, "
      "l1_by_repeats=1)";
  expect_cuda_pass("hoist_copy_addresses", in.text(), out.text());
  out.a_copy = "cp_async, width=16, cache_all=1, hoist=(indices=[{index_rows[i]}, {j}], step=64)";
  expect_cuda_pass("hoist_copy_addresses", in.text(), out.text(),
                   options({"gather_cache_by_repeats=0"}));
  in.a_copy = "cp_async, width=16";
  out = in;
  out.a_copy = "cp_async, width=16, hoist=(indices=[{index_rows[i]}, {j}], step=64)";
  expect_cuda_pass("hoist_copy_addresses", in.text(), out.text());
}

// The by-repeats test compares a lane's slots 0 and 1, so it needs two
// slots in one column chunk of two rows: 256 producer threads over rows of
// 8 chunks give 4 (slot 1 thirty-two rows below slot 0); 1024 give one
// slot a thread, hoisted without the test.
TEST(HoistCopyAddresses, CacheLevelByRepeatsNeedsTwoSlotsInOneColumn) {
  auto with_producer = [](int threads) {
    GemmText g = testing::gathered_gemm();
    const std::string p128 = "producer_threads=128";
    g.loop_plan.replace(g.loop_plan.find(p128), p128.size(),
                        "producer_threads=" + std::to_string(threads));
    g.launch.replace(g.launch.find("threads=384"), 11,
                     "threads=" + std::to_string(256 + threads));
    return g;
  };
  GemmText in = with_producer(256), out = in;
  out.a_copy =
      "cp_async, width=16, cache_all=1, hoist=(indices=[{index_rows[i]}, {j}], step=64, "
      "l1_by_repeats=1)";
  expect_cuda_pass("hoist_copy_addresses", in.text(), out.text());
  in = with_producer(1024), out = in;
  out.a_copy = "cp_async, width=16, cache_all=1, hoist=(indices=[{index_rows[i]}, {j}], step=64)";
  expect_cuda_pass("hoist_copy_addresses", in.text(), out.text());
}

// A split-K loop's K offset, `(split*16 + k)*64`, which simplify keeps
// whole: expanded, the address is still affine in k (a step of 64).
TEST(HoistCopyAddresses, SplitKOffsetIsAffineInK) {
  GemmText in = testing::gathered_gemm(), out = in;
  in.a_value = "x[index_rows[i], (pid_n*16 + k)*64 + j]";
  out.a_value = in.a_value;
  out.a_copy =
      "cp_async, width=16, cache_all=1, hoist=(indices=[{index_rows[i]}, {pid_n*1024 + j}], "
      "step=64, l1_by_repeats=1)";
  expect_cuda_pass("hoist_copy_addresses", in.text(), out.text());
  // Not affine: k times a grid var.
  in.a_value = "x[index_rows[i], k*pid_n + j]";
  expect_cuda_pass("hoist_copy_addresses", in.text(), in.text());
}

// Not an affine tile's (a few integer ops an iteration, not worth three
// registers a slot), not outside a producer, not with the option off.
TEST(HoistCopyAddresses, OnlyGatheredRowsOfAProducer) {
  GemmText affine = testing::gathered_gemm();
  affine.a_value = "";
  affine.a_copy = "cp_async, width=16";
  expect_cuda_pass("hoist_copy_addresses", affine.text(), affine.text());
  GemmText ring = testing::gathered_gemm();
  ring.launch = "threads=256, shared_bytes=0, shared_align=128, async_barriers=1";
  ring.loop_plan = "wgmma_async, stages=3, issue_ahead=2";
  ring.b_copy = "cp_async, width=16";
  expect_cuda_pass("hoist_copy_addresses", ring.text(), ring.text());
  GemmText in = testing::gathered_gemm();
  expect_cuda_pass("hoist_copy_addresses", in.text(), in.text(),
                   options({"hoist_copy_addresses=0"}));
}

}  // namespace
}  // namespace tilefuse::codegen
