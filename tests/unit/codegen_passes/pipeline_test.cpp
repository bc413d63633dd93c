// pipeline (software_pipeline): the form of every pipelined loop that is not
// warp-specialized, its issue-ahead distance and wgmma wait depth, and
// register double-buffering of register-staged copies.
#include <gtest/gtest.h>

#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;
using testing::mma_sync_gemm;
using testing::options;

// The wgmma GEMM in a loop that is not warp-specialized (cp.async copies).
GemmText wgmma_async_gemm(int stages) {
  GemmText g = testing::wgmma_gemm("lower_gemm");
  g.stages = stages;
  g.a_copy = g.b_copy = "cp_async, width=16";
  return g;
}

// 64 accumulators a thread: a plain ring, copies stages - 1 tiles ahead.
TEST(Pipeline, RingForASmallMmaSyncTile) {
  GemmText in = mma_sync_gemm(128, 3), out = in;
  out.loop_plan = "ring, stages=3, issue_ahead=2";
  expect_cuda_pass("pipeline", in.text(), out.text(), {}, "sm_80");
}

// 128 accumulators a thread and two k16 steps: MMA fragments
// double-buffered (unless the option is off).
TEST(Pipeline, FragmentPipelinedForALargeMmaSyncTile) {
  GemmText in = mma_sync_gemm(256, 3), out = in;
  out.loop_plan = "fragment_pipelined, stages=3, issue_ahead=2";
  expect_cuda_pass("pipeline", in.text(), out.text(), {}, "sm_80");
  out.loop_plan = "ring, stages=3, issue_ahead=2";
  expect_cuda_pass("pipeline", in.text(), out.text(), options({"fragment_pipeline=0"}), "sm_80");
}

// Not for TF32 (its f32 tiles spilled with two fragment sets).
TEST(Pipeline, Tf32IsARing) {
  GemmText in = mma_sync_gemm(256, 3);
  in.dtype = in.out = "f32";
  in.b_plan = "swizzled32, stages=1";
  in.c_plan = "mma_sync_tf32, operand=f32, block=[128, 256, 32], warps=[2, 4]";
  GemmText out = in;
  out.loop_plan = "ring, stages=3, issue_ahead=2";
  expect_cuda_pass("pipeline", in.text(), out.text(), options({"allow_tf32=1"}), "sm_80");
}

// A register-staged copy of whole slots per thread is double-buffered in
// registers (128x32 f16 read as 16-byte f32 vectors: 4 vectors, 16
// elements a thread); the loop is then a ring, not fragment-pipelined.
TEST(Pipeline, RegisterDoubleBuffering) {
  GemmText in = mma_sync_gemm(256, 3);
  in.params = "  s: global readonly f32[2048, 2048] strides [2048, 1] align 16,\n";
  in.a_value = "f16(s[pid_m*128 + i, k*32 + j])";
  in.a_copy = "register, width=16, vector_load={s[pid_m*128 + i, k*32 + j]}";
  GemmText out = in;
  out.a_copy = "register, width=16, vector_load={s[pid_m*128 + i, k*32 + j]}, slots=16";
  out.loop_plan = "ring, stages=3, issue_ahead=2";
  expect_cuda_pass("pipeline", in.text(), out.text(), {}, "sm_80");
}

// wgmma asynchronous to the copies: with 4 or more stages one MMA group
// stays in flight across the barrier and the copies run stages - 2 ahead;
// else (or with wgmma_keep_one off) none, stages - 1 ahead.
TEST(Pipeline, WgmmaAsyncWithAndWithoutOneGroupInFlight) {
  {
    GemmText in = wgmma_async_gemm(3), out = in;
    out.loop_plan = "wgmma_async, stages=3, issue_ahead=2";
    expect_cuda_pass("pipeline", in.text(), out.text());
  }
  {
    GemmText in = wgmma_async_gemm(4), out = in;
    out.loop_plan = "wgmma_async, stages=4, issue_ahead=2, wgmma_in_flight=1";
    expect_cuda_pass("pipeline", in.text(), out.text());
    out.loop_plan = "wgmma_async, stages=4, issue_ahead=3";
    expect_cuda_pass("pipeline", in.text(), out.text(), options({"wgmma_keep_one=0"}));
  }
}

// Under an asynchronous wgmma a register-staged copy is not
// double-buffered (the registers are the accumulators').
TEST(Pipeline, NoRegisterDoubleBufferingUnderWgmma) {
  GemmText in = wgmma_async_gemm(3);
  in.params = "  s: global readonly f32[2048, 2048] strides [2048, 1] align 16,\n";
  in.a_value = "f16(s[pid_m*128 + i, k*64 + j])";
  in.a_copy = "register, width=16, vector_load={s[pid_m*128 + i, k*64 + j]}";
  GemmText out = in;
  out.loop_plan = "wgmma_async, stages=3, issue_ahead=2";
  expect_cuda_pass("pipeline", in.text(), out.text());
}

// A statement between the copies (an index check of a gather along K):
// in order, one stage, and a note says why; with one stage there is
// nothing to say.
TEST(Pipeline, InOrderSaysWhy) {
  const std::string irregular =
      "irregular body: statements between or after the copies other than the gemm (e.g. an "
      "index check of a gather along K)";
  GemmText in = mma_sync_gemm(128, 3);
  in.between = "  check(k < 64, code=1, msg=\"k\")\n";
  GemmText out = in;
  out.loop_plan = "in_order, stages=1, issue_ahead=0, why=\"" + irregular + "\"";
  out.launch +=
      ", notes=[\"loop k not software-pipelined (" + irregular + "): its tiles get one stage\"]";
  expect_cuda_pass("pipeline", in.text(), out.text(), {}, "sm_80");

  in = mma_sync_gemm(128, 1), out = in;
  out.loop_plan = "in_order, stages=1, issue_ahead=0, why=\"one stage\"";
  expect_cuda_pass("pipeline", in.text(), out.text(), {}, "sm_80");
}

// warp_specialize decided the loop already.
TEST(Pipeline, LeavesTheWarpSpecializedLoopAlone) {
  GemmText in = testing::wgmma_gemm("lower_copies");
  expect_cuda_pass("pipeline", in.text(), testing::wgmma_gemm("pipeline").text());
}

}  // namespace
}  // namespace tilefuse::codegen
