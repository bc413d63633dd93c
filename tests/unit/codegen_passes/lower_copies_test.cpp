// lower_copies in the CUDA table: TMA is decided once, here, and only for a
// copy a warp-specialized producer issues; everywhere else an eligible tile
// is cp.async and its reason says why not TMA. (The width rules over dtype,
// contiguity and alignment: tests/unit/passes/lower_copies_test.cpp.)
#include <gtest/gtest.h>

#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;
using testing::options;

// Why an eligible tile is cp.async: `why` for the affine `tile`.
std::string eligible(const std::string& tile, const std::string& why) {
  return "TMA-eligible (affine " + tile + "), issued as cp.async: " + why;
}
std::string not_in_producer(const std::string& tile) {
  return eligible(tile, "only the producer warpgroup of a warp-specialized wgmma loop issues TMA");
}

std::string cp_async_a(const std::string& not_tma) {
  return "cp_async, width=16, reason=\"plain f16 load of x, 128 contiguous bytes along j, "
         "16-byte aligned: cp.async 16 B (.cg); not TMA: " +
         not_tma + "\"";
}
std::string cp_async_b(const std::string& not_tma) {
  return "cp_async, width=16, reason=\"plain f16 load of y, 256 contiguous bytes along j_1, "
         "16-byte aligned: cp.async 16 B (.cg); not TMA: " +
         not_tma + "\"";
}

// Inside the warp-specialized loop both affine tiles go by TMA: boxes
// planned against the swizzles lower_gemm chose (A: one 64x128 box with the
// 128-byte swizzle; B, MN-major: one box per 128-byte column strip), one
// tensor map each.
TEST(CudaLowerCopies, TmaInsideTheWarpSpecializedLoop) {
  GemmText in = testing::wgmma_gemm("warp_specialize"), out = in;
  out.a_copy = testing::kTmaA;
  out.b_copy = testing::kTmaB;
  out.launch =
      "threads=384, consumer_threads=256, shared_bytes=0, shared_align=128, async_barriers=1, " +
      std::string(testing::kTensorMaps) + ", notes=[\"" + testing::kWarpSpecializedNote + "\"]";
  EXPECT_EQ(out.text(), testing::wgmma_gemm("lower_copies").text());
  expect_cuda_pass("lower_copies", in.text(), out.text());
}

// The same tiles in a loop that is not warp-specialized: cp.async, and the
// reason says why not TMA (no tensor maps).
TEST(CudaLowerCopies, SameTileOutsideIsCpAsync) {
  GemmText in = testing::wgmma_gemm("lower_gemm"), out = in;
  out.a_copy = cp_async_a(not_in_producer("128x64 tile"));
  out.b_copy = cp_async_b(not_in_producer("64x128 tile"));
  expect_cuda_pass("lower_copies", in.text(), out.text());
}

TEST(CudaLowerCopies, TmaOptionOff) {
  GemmText in = testing::wgmma_gemm("warp_specialize"), out = in;
  out.a_copy = cp_async_a(eligible("128x64 tile", "the tma option is off"));
  out.b_copy = cp_async_b(eligible("64x128 tile", "the tma option is off"));
  expect_cuda_pass("lower_copies", in.text(), out.text(), options({"tma=0"}));
}

// An eligible tile whose shared layout no tensor map writes (swizzled rows
// of 64 bytes: the 128-byte swizzle needs 128-byte rows) is cp.async, with a
// note; the other tile still goes by TMA, with the first tensor map.
TEST(CudaLowerCopies, LayoutATensorMapCannotWriteIsCpAsyncWithANote) {
  GemmText in = testing::wgmma_gemm("warp_specialize");
  in.bk = 16;
  in.c_plan = "wgmma, operand=f16, block=[128, 128, 16], warps=[2, 1]";
  GemmText out = in;
  out.a_copy =
      "cp_async, width=16, reason=\"plain f16 load of x, 32 contiguous bytes along j, 16-byte "
      "aligned: cp.async 16 B (.cg); not TMA: swizzled rows of other than 128 or 64 bytes\"";
  out.b_copy =
      "tma, width=16, map=0, boxes=[({pid_n*128}, {k*16}, smem=0), ({pid_n*128 + 64}, {k*16}, "
      "smem=1024)], bytes=4096, reason=\"affine 16x128 tile of y, 16-byte aligned base and "
      "strides: TMA\"";
  out.launch =
      "threads=384, consumer_threads=256, shared_bytes=0, shared_align=128, async_barriers=1, "
      "tensor_maps=[(param=1, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 16], "
      "swizzle=128)], notes=[\"" +
      std::string(testing::kWarpSpecializedNote) +
      "\", \"copy A_s: cp.async, not TMA: swizzled rows of other than 128 or 64 bytes\"]";
  expect_cuda_pass("lower_copies", in.text(), out.text());
}

// 64-byte swizzled rows (BLOCK_K 32 of f16) are TMA's 64-byte swizzle: one
// box of 32 columns x 128 rows.
TEST(CudaLowerCopies, SixtyFourByteRowsAreTmaWithThe64ByteSwizzle) {
  GemmText in = testing::wgmma_gemm("warp_specialize");
  in.bk = 32;
  in.c_plan = "wgmma, operand=f16, block=[128, 128, 32], warps=[2, 1]";
  GemmText out = in;
  out.a_copy =
      "tma, width=16, map=0, boxes=[({k*32}, {pid_m*128}, smem=0)], bytes=8192, reason=\"affine "
      "128x32 tile of x, 16-byte aligned base and strides: TMA\"";
  out.b_copy =
      "tma, width=16, map=1, boxes=[({pid_n*128}, {k*32}, smem=0), ({pid_n*128 + 64}, {k*32}, "
      "smem=2048)], bytes=8192, reason=\"affine 32x128 tile of y, 16-byte aligned base and "
      "strides: TMA\"";
  out.launch =
      "threads=384, consumer_threads=256, shared_bytes=0, shared_align=128, async_barriers=1, "
      "tensor_maps=[(param=0, elem=2, dims=[2048, 2048], strides=[4096], box=[32, 128], "
      "swizzle=64), (param=1, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 32], "
      "swizzle=128)], notes=[\"" +
      std::string(testing::kWarpSpecializedNote) + "\"]";
  expect_cuda_pass("lower_copies", in.text(), out.text());
}

// The seed's gathered A tile (rows through a shared index tile): cp.async,
// a gather is not an affine tile; under tma_row_gather, TMA with one 1-row
// box per gathered row.
GemmText gathered(const std::string& index_plan, const std::string& index_copy) {
  GemmText g = testing::wgmma_gemm("warp_specialize");
  g.params = testing::kIndexParam;
  g.allocs = "  alloc index_rows: shared i64[128]" + testing::plan(index_plan) + "\n";
  g.prologue = "  copy (r: 128) index_rows[r] = index[pid_m*128 + r]" + testing::plan(index_copy) +
               "\n  barrier()\n";
  g.a_value = "x[index_rows[i], k*64 + j]";
  return g;
}

// The seed's index tile copy (outside the producer: cp.async, not TMA).
std::string index_copy_plan() {
  return "cp_async, width=16, reason=\"plain i64 load of index, 1024 contiguous bytes along r, "
         "16-byte aligned: cp.async 16 B (.cg); not TMA: " +
         not_in_producer("128 tile") + "\"";
}
// The seed's affine y tile by TMA with tensor map `map`.
std::string tma_y(int map) {
  return "tma, width=16, map=" + std::to_string(map) +
         ", boxes=[({pid_n*128}, {k*64}, smem=0), ({pid_n*128 + 64}, {k*64}, smem=4096)], "
         "bytes=16384, reason=\"affine 64x128 tile of y, 16-byte aligned base and strides: TMA\"";
}

TEST(CudaLowerCopies, GatheredRowsAreCpAsyncUnlessTmaRowGather) {
  GemmText in = gathered("", ""), out = gathered("", index_copy_plan());
  out.a_copy =
      "cp_async, width=16, cache_all=1, reason=\"plain f16 load of x, 128 contiguous bytes along "
      "j, 16-byte aligned: cp.async 16 B (.ca), gathered rows through L1; not TMA: gather: "
      "address depends on a loaded value, TMA needs an affine tile\"";
  out.b_copy = tma_y(0);
  const std::string map_y =
      "(param=1, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 64], swizzle=128)";
  out.launch =
      "threads=384, consumer_threads=256, shared_bytes=0, shared_align=128, async_barriers=1, "
      "tensor_maps=[" +
      map_y + "], notes=[\"" + testing::kWarpSpecializedNote + "\"]";
  expect_cuda_pass("lower_copies", in.text(), out.text());

  out.a_copy =
      "tma, width=16, map=0, boxes=[({k*64}, {index_rows[i]}, smem=0)], bytes=16384, rows=128, "
      "row_pitch=64, reason=\"gathered rows of x: TMA, one 1-row box per row (tma_row_gather)\"";
  out.b_copy = tma_y(1);
  out.launch =
      "threads=384, consumer_threads=256, shared_bytes=0, shared_align=128, async_barriers=1, "
      "tensor_maps=[(param=0, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 1], "
      "swizzle=128), " +
      map_y + "], notes=[\"" + testing::kWarpSpecializedNote +
      "\", \"copy A_s: TMA, one box per gathered row (tma_row_gather)\"]";
  expect_cuda_pass("lower_copies", in.text(), out.text(), options({"tma_row_gather=1"}));
}

// Under hybrid_row_gather the seed's gathered tile is two copies: its first
// quarter of rows (32 of 128) by TMA row boxes, the other 96 by cp.async at
// row r + 32 (a row var of their own), each with its plan; the affine B tile
// keeps its one tensor map (the whole tile's trial planning leaves none).
// Without the option the tile stays whole: GatheredRowsAreCpAsyncUnlessTmaRowGather.
TEST(CudaLowerCopies, HybridRowGatherSplitsTheGatheredTile) {
  GemmText in = gathered("", ""), out = gathered("", index_copy_plan());
  out.a_copy =
      "tma, width=16, map=0, boxes=[({k*64}, {index_rows[i]}, smem=0)], bytes=4096, rows=32, "
      "row_pitch=64, reason=\"gathered rows of x 0..31: TMA, one 1-row box per row "
      "(hybrid_row_gather)\"";
  out.b_copy = tma_y(1);
  out.launch =
      "threads=384, consumer_threads=256, shared_bytes=0, shared_align=128, async_barriers=1, "
      "tensor_maps=[(param=0, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 1], "
      "swizzle=128), (param=1, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 64], "
      "swizzle=128)], notes=[\"" +
      std::string(testing::kWarpSpecializedNote) +
      "\", \"copy A_s: rows 0..31 by TMA, one box per gathered row, rows 32..127 by cp.async "
      "(hybrid_row_gather)\"]";
  // The cp.async part follows the TMA part in the loop body.
  out.between =
      "  copy (i_c: 96, j: 64) A_s[i_c + 32, j] = x[index_rows[i_c + 32], k*64 + j] "
      "plan(cp_async, width=16, cache_all=1, reason=\"plain f16 load of x, 128 contiguous bytes "
      "along j, 16-byte aligned: cp.async 16 B (.ca), gathered rows through L1; not TMA: gather: "
      "address depends on a loaded value, TMA needs an affine tile; rows 32..127 of the tile "
      "(hybrid_row_gather)\")\n";
  std::string want = out.text();
  const std::string whole = "copy (i: 128, j: 64)";
  ASSERT_NE(want.find(whole), std::string::npos);
  want.replace(want.find(whole), whole.size(), "copy (i: 32, j: 64)");
  expect_cuda_pass("lower_copies", in.text(), want, options({"hybrid_row_gather=1"}));
}

// A conversion in the prologue: register-staged, the main source read 16
// bytes at a time (its vector load, by identity, in the plan).
TEST(CudaLowerCopies, ConversionIsRegisterStagedWithAVectorLoad) {
  GemmText in = testing::wgmma_gemm("lower_gemm");
  in.params = "  s: global readonly f32[2048, 2048] strides [2048, 1] align 16,\n";
  in.a_value = "f16(s[pid_m*128 + i, k*64 + j])";
  GemmText out = in;
  out.a_copy =
      "register, width=16, vector_load={s[pid_m*128 + i, k*64 + j]}, reason=\"register-staged "
      "(ld.global 16 B): the source is not a plain load of f16 (conversion or math in the "
      "prologue); not TMA: the source is not a plain load of f16, TMA copies bytes unchanged\"";
  out.b_copy = cp_async_b(not_in_producer("64x128 tile"));
  expect_cuda_pass("lower_copies", in.text(), out.text());
}

}  // namespace
}  // namespace tilefuse::codegen
