// warp_specialize: the top-level wgmma main loop gets a producer warpgroup;
// every wgmma main loop that does not says why in the launch plan's notes
// (no silent fallback).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;
using testing::options;
using testing::with_note;

// The wgmma GEMM as lower_gemm leaves it (128x128x64, 8 warps, 3 stages).
GemmText wgmma_gemm() {
  return testing::wgmma_gemm("lower_gemm");
}

TEST(WarpSpecialize, TopLevelWgmmaLoopIsSpecialized) {
  GemmText in = wgmma_gemm(), out = in;
  // A producer warpgroup after the two MMA warpgroups, a whole ring ahead,
  // one wgmma group in flight while the previous stage is released.
  out.launch =
      "threads=384, consumer_threads=256, shared_bytes=0, shared_align=128, async_barriers=1, "
      "notes=[\"warp-specialized: warpgroup 2 issues the copies (mbarrier pipeline), warpgroups "
      "0..1 run wgmma\"]";
  out.loop_plan =
      "warp_specialized, stages=3, issue_ahead=3, wgmma_in_flight=1, producer_threads=128, "
      "consumer_threads=256";
  expect_cuda_pass("warp_specialize", in.text(), out.text());
}

// A copy the producer would stage through registers (here a conversion
// from f32) keeps the loop on all warps.
TEST(WarpSpecialize, NotWithARegisterStagedCopy) {
  GemmText in = wgmma_gemm();
  in.params = "  s: global readonly f32[2048, 2048] strides [2048, 1] align 16,\n";
  in.a_value = "f16(s[pid_m*128 + i, k*64 + j])";
  expect_cuda_pass("warp_specialize", in.text(),
                   with_note(in,
                             "wgmma main loop not warp-specialized: copy A_s is register-staged "
                             "(its producer would spill)")
                       .text());
}

TEST(WarpSpecialize, NotWithMoreThanTwoMmaWarpgroups) {
  GemmText in = wgmma_gemm();
  in.bm = 256, in.warps = 16;
  in.launch = "threads=512, shared_bytes=0, shared_align=128, async_barriers=1";
  in.c_plan = "wgmma, operand=f16, block=[256, 128, 64], warps=[4, 1]";
  expect_cuda_pass(
      "warp_specialize", in.text(),
      with_note(in, "wgmma main loop not warp-specialized: more than two MMA warpgroups").text());
}

TEST(WarpSpecialize, NotWithTheOptionOff) {
  GemmText in = wgmma_gemm();
  expect_cuda_pass(
      "warp_specialize", in.text(),
      with_note(in, "wgmma main loop not warp-specialized: the warp_specialize option is off")
          .text(),
      options({"warp_specialize=0"}));
}

// A K loop inside a tile loop (a persistent kernel's shape): the split
// runs the loop once per block, so it is not specialized, and the launch
// plan says why rather than falling back silently.
TEST(WarpSpecialize, KLoopInsideATileLoopSaysWhy) {
  GemmText in = wgmma_gemm();
  in.tile_loop = true;
  expect_cuda_pass("warp_specialize", in.text(),
                   with_note(in,
                             "wgmma main loop k not warp-specialized: it sits inside another "
                             "loop or a branch (the producer/consumer split runs the loop once "
                             "per block, at the kernel's top level)")
                       .text());
}

// Two pipelined loops: neither is the kernel's one main loop.
TEST(WarpSpecialize, TwoPipelinedLoopsSayWhy) {
  GemmText in = wgmma_gemm();
  // The same K loop again, accumulating into C_f a second time.
  std::string text = in.text();
  const size_t loop = text.find("  for k in pipelined");
  const size_t end = text.find("  }\n", loop) + 4;
  std::string second = text.substr(loop, end - loop);
  second.replace(second.find("for k "), 6, "for k2 ");
  for (size_t p; (p = second.find("k*64")) != std::string::npos;) second.replace(p, 4, "k2*64");
  text.insert(end, second);
  text = tir::print(tir::parse_kernel(text));  // (the copy vars of the second loop renamed)
  std::string out = text;
  auto note = [](const char* loop) {
    return fmt::format(
        "wgmma main loop {} not warp-specialized: the kernel has more than one pipelined loop",
        loop);
  };
  out.replace(out.find("async_barriers=1"), 16,
              "async_barriers=1, notes=[\"" + note("k") + "\", \"" + note("k2") + "\"]");
  expect_cuda_pass("warp_specialize", text, out);
}

// An mma.sync loop is no wgmma main loop: nothing to say.
TEST(WarpSpecialize, LeavesMmaSyncLoopsAlone) {
  GemmText in = wgmma_gemm();
  in.launch = "threads=256, shared_bytes=0, shared_align=128";
  in.b_plan = "swizzled, stages=1";
  in.c_plan = "mma_sync, operand=f16, block=[128, 128, 64], warps=[2, 4]";
  expect_cuda_pass("warp_specialize", in.text(), in.text(), {}, "sm_80");
}

TEST(WarpSpecialize, RunsAfterLowerGemm) {
  GemmText in = wgmma_gemm();
  in.launch = in.a_plan = in.b_plan = in.c_plan = "";
  EXPECT_THROW(testing::cuda_pass("warp_specialize")(tir::parse_kernel(in.text())), InternalError);
}

}  // namespace
}  // namespace tilefuse::codegen
