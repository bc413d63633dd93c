// register_budgets: setmaxnreg budgets for a warp-specialized loop's roles
// where the producer computes no addresses, and a note either way.
#include <gtest/gtest.h>

#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;
using testing::options;
using testing::with_note;

// Only TMA, or hoisted cp.async: 64 registers a producer thread, 216 an
// MMA thread.
TEST(RegisterBudgets, ProducerThatComputesNoAddresses) {
  GemmText in = testing::wgmma_gemm("hoist_copy_addresses");
  expect_cuda_pass("register_budgets", in.text(), testing::wgmma_gemm("register_budgets").text());
  in = testing::gathered_gemm();
  in.a_copy = "cp_async, width=16, cache_all=1, hoist=(indices=[{index_rows[i]}, {j}], step=64)";
  GemmText out = with_note(in, testing::kBudgetsNote);
  out.loop_plan += ", registers=[64, 216]";
  expect_cuda_pass("register_budgets", in.text(), out.text());
}

TEST(RegisterBudgets, NoneWhereTheProducerComputesAddresses) {
  GemmText in = testing::gathered_gemm();
  expect_cuda_pass(
      "register_budgets", in.text(),
      with_note(in,
                "no register budgets (setmaxnreg): copy A_s computes its addresses in the producer")
          .text());
}

// Budgets are for two MMA warpgroups and a producer (384 threads).
TEST(RegisterBudgets, NoneForOtherBlockShapes) {
  GemmText in = testing::wgmma_gemm("hoist_copy_addresses");
  in.bm = 64, in.warps = 4;
  in.c_plan = "wgmma, operand=f16, block=[64, 128, 64], warps=[1, 1]";
  in.loop_plan =
      "warp_specialized, stages=3, issue_ahead=3, wgmma_in_flight=1, producer_threads=128, "
      "consumer_threads=128";
  in.launch =
      "threads=256, consumer_threads=128, shared_bytes=0, shared_align=128, async_barriers=1, "
      "tensor_maps=[(param=0, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 64], "
      "swizzle=128), (param=1, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 64], "
      "swizzle=128)], notes=[\"warp-specialized\"]";
  in.a_copy = "tma, width=16, map=0, boxes=[({k*64}, {pid_m*64}, smem=0)], bytes=8192";
  expect_cuda_pass("register_budgets", in.text(),
                   with_note(in,
                             "no register budgets (setmaxnreg): a 256-thread block (budgets are "
                             "set for two MMA warpgroups)")
                       .text());
}

TEST(RegisterBudgets, OptionOff) {
  GemmText in = testing::wgmma_gemm("hoist_copy_addresses");
  expect_cuda_pass("register_budgets", in.text(), in.text(), options({"setmaxnreg=0"}));
}

}  // namespace
}  // namespace tilefuse::codegen
