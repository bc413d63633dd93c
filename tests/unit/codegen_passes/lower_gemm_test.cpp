// lower_gemm: the MMA family, the warp grid, the operand swizzles and the
// launch's threads, with a note for every choice that is not the first.
#include <gtest/gtest.h>

#include "core/error.h"
#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;
using testing::options;

// The GEMM as the target-independent passes leave it: no plan yet.
GemmText input(const std::string& dtype, int bm, int bn, int bk, int warps) {
  GemmText g;
  g.dtype = g.out = dtype;
  g.bm = bm, g.bn = bn, g.bk = bk, g.warps = warps;
  return g;
}

TEST(LowerGemm, F16OnSm90aIsWgmmaWithSwizzledOperands) {
  GemmText in = input("f16", 128, 128, 64, 8), out = in;
  // Two warpgroups over M (64x128 each: the widest N, fewest m64 rows).
  out.launch = "threads=256, shared_bytes=0, shared_align=128, async_barriers=1";
  out.a_plan = "swizzled, stages=1";     // K-major, 128-byte swizzle
  out.b_plan = "mn_swizzled, stages=1";  // MN-major, 128-byte column strips
  out.c_plan = "wgmma, operand=f16, block=[128, 128, 64], warps=[2, 1]";
  expect_cuda_pass("lower_gemm", in.text(), out.text());
}

// BLOCK_K 32 of a 16-bit type: 64-byte rows, A in the 64-byte swizzle (the
// same `swizzled` layout; tf_wgmma.cuh's descriptor says which mode).
TEST(LowerGemm, Block32IsWgmmaWith64ByteRows) {
  GemmText in = input("bf16", 128, 128, 32, 8), out = in;
  out.launch = "threads=256, shared_bytes=0, shared_align=128, async_barriers=1";
  out.a_plan = "swizzled, stages=1";
  out.b_plan = "mn_swizzled, stages=1";
  out.c_plan = "wgmma, operand=bf16, block=[128, 128, 32], warps=[2, 1]";
  expect_cuda_pass("lower_gemm", in.text(), out.text());
}

// BLOCK_N 192 (not a power of two): two warpgroups over M, each 64x192
// (wgmma m64n192: three 128-byte strips of B), not 128x96 (N split in
// two: WN must be a multiple of 64, one strip per 64 columns).
TEST(LowerGemm, BlockN192IsTwoWarpgroupsOf64x192) {
  GemmText in = input("f16", 128, 192, 64, 8), out = in;
  out.launch = "threads=256, shared_bytes=0, shared_align=128, async_barriers=1";
  out.a_plan = "swizzled, stages=1";
  out.b_plan = "mn_swizzled, stages=1";
  out.c_plan = "wgmma, operand=f16, block=[128, 192, 64], warps=[2, 1]";
  expect_cuda_pass("lower_gemm", in.text(), out.text());
}

TEST(LowerGemm, F16OnSm80IsMmaSync) {
  GemmText in = input("f16", 128, 128, 64, 8), out = in;
  out.launch = "threads=256, shared_bytes=0, shared_align=128";
  out.a_plan = "swizzled, stages=1";
  out.b_plan = "swizzled, stages=1";
  out.c_plan = "mma_sync, operand=f16, block=[128, 128, 64], warps=[2, 4]";
  expect_cuda_pass("lower_gemm", in.text(), out.text(), {}, "sm_80");
}

// On sm_90a every tile that stays on mma.sync says why.
TEST(LowerGemm, MmaSyncOnSm90aSaysWhyNotWgmma) {
  auto mma_sync = [](GemmText g, const std::string& note) {
    g.launch =
        "threads=256, shared_bytes=0, shared_align=128, notes=[\"mma.sync, not wgmma: " + note +
        "\"]";
    g.a_plan = g.b_plan = "swizzled, stages=1";
    g.c_plan = "mma_sync, operand=f16, block=[" + std::to_string(g.bm) + ", " +
               std::to_string(g.bn) + ", " + std::to_string(g.bk) + "], warps=[2, 4]";
    return g.text();
  };
  {
    SCOPED_TRACE("BLOCK_K 16");
    GemmText in = input("f16", 128, 128, 16, 8);
    expect_cuda_pass("lower_gemm", in.text(),
                     mma_sync(in,
                              "BLOCK_K 16 (32 bytes per row; the wgmma path takes 128 or 64: one "
                              "128- or 64-byte swizzle row)"));
  }
  {
    SCOPED_TRACE("no warpgroup tile");
    GemmText in = input("f16", 64, 64, 64, 8);
    expect_cuda_pass("lower_gemm", in.text(),
                     mma_sync(in,
                              "no warpgroup tile of a 64x64 block with 8 warps (WM a multiple of "
                              "64, WN 64, 128, 192 or 256, at most 128 accumulators per "
                              "thread)"));
  }
  {
    SCOPED_TRACE("option off");
    GemmText in = input("f16", 128, 128, 64, 8);
    expect_cuda_pass("lower_gemm", in.text(), mma_sync(in, "the wgmma option is off"),
                     options({"wgmma=0"}));
  }
}

// A tile with fewer 16x16 warp tiles than warps shrinks the block, and
// says so (and then why it is not wgmma either).
TEST(LowerGemm, FewerWarpsThanAskedNote) {
  GemmText in = input("f16", 32, 32, 64, 8), out = in;
  out.launch =
      "threads=128, shared_bytes=0, shared_align=128, notes=[\"num_warps 8 -> 4: a 32x32 tile "
      "has only 4 warp tiles of 16x16 or more\", \"mma.sync, not wgmma: no warpgroup tile of a "
      "32x32 block with 4 warps (WM a multiple of 64, WN 64, 128, 192 or 256, at most 128 "
      "accumulators per thread)\"]";
  out.a_plan = out.b_plan = "swizzled, stages=1";
  out.c_plan = "mma_sync, operand=f16, block=[32, 32, 64], warps=[2, 2]";
  expect_cuda_pass("lower_gemm", in.text(), out.text());
}

// f32 is exact (one FMA per product; no operand swizzles) unless
// allow_tf32: then TF32 tensor cores, B in 32-byte swizzle units.
TEST(LowerGemm, F32IsSimtUnlessTf32IsAllowed) {
  GemmText in = input("f32", 128, 128, 32, 8);
  GemmText simt = in;
  simt.launch = "threads=256, shared_bytes=0, shared_align=128";
  simt.c_plan = "simt_fma, operand=f32, block=[128, 128, 32], threads=256";
  expect_cuda_pass("lower_gemm", in.text(), simt.text());
  GemmText tf32 = in;
  tf32.launch =
      "threads=256, shared_bytes=0, shared_align=128, notes=[\"allow_tf32: the f32 gemm into C_f "
      "runs on TF32 tensor cores (operands rounded to 10 mantissa bits)\"]";
  tf32.a_plan = "swizzled, stages=1";
  tf32.b_plan = "swizzled32, stages=1";
  tf32.c_plan = "mma_sync_tf32, operand=f32, block=[128, 128, 32], warps=[2, 4]";
  expect_cuda_pass("lower_gemm", in.text(), tf32.text(), options({"allow_tf32=1"}));
  expect_cuda_pass("lower_gemm", in.text(), tf32.text(), options({"allow_tf32=1"}), "sm_80");
}

// A TF32 tile without a 16x16 warp tile falls back to exact FMA (said),
// and the FMA tile halves the warps until they spread over it (said).
TEST(LowerGemm, Tf32WithoutWarpTileIsFmaWithFewerWarps) {
  GemmText in = input("f32", 8, 8, 8, 8), out = in;
  out.launch =
      "threads=64, shared_bytes=0, shared_align=128, notes=[\"allow_tf32: the 8x8 tile has no "
      "16x16 warp tile: exact FMA instead\", \"num_warps 8 -> 4: the 8x8 FMA tile\", \"num_warps "
      "4 -> 2: the 8x8 FMA tile\"]";
  out.c_plan = "simt_fma, operand=f32, block=[8, 8, 8], threads=64";
  expect_cuda_pass("lower_gemm", in.text(), out.text(), options({"allow_tf32=1"}));
}

// A fragment no gemm writes (the K loop was empty and removed) is a FMA
// tile of its own shape, filled only.
TEST(LowerGemm, FragmentWithoutGemm) {
  const std::string body = R"(  alloc C_f: fragment f32[64, 16]{plan}
  fill(C_f, 0.0)
  for i in parallel(0, 64) {
    for j in parallel(0, 16) {
      out[p*64 + i] = C_f[i, j]
    }
  }
)";
  auto kernel = [&](const std::string& launch, const std::string& c_plan) {
    std::string b = body;
    b.replace(b.find("{plan}"), 6, c_plan);
    std::string k = passes::testing::kernel_text(b);
    k.replace(k.find(" {\n"), 3, launch + " {\n");
    return k;
  };
  expect_cuda_pass(
      "lower_gemm", kernel("", ""),
      kernel(" plan(threads=128, shared_bytes=0, shared_align=128, notes=[\"fragment C_f has no "
             "gemm (empty K loop): fill only\"])",
             " plan(simt_fma, operand=f32, block=[64, 16, 16], threads=128)"));
}

TEST(LowerGemm, IsForCudaTargetsOnly) {
  GemmText in = input("f16", 128, 128, 64, 8);
  const tir::Kernel k = tir::parse_kernel(in.text());
  EXPECT_THROW(testing::cuda_pass("lower_gemm", {}, "cpu")(k), InternalError);
}

}  // namespace
}  // namespace tilefuse::codegen
