// epilogue: how each nest over an accumulator stores it (staged, paired,
// per_element), and, for a tensor-core tile that is not staged, why.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;
using testing::options;

// Most tests below check the whole-tile staged form
// (warp_staged_epilogue=0): where it is staged, by what and with which
// proofs is the same decision for a per-warp epilogue (the PerWarp tests).
void expect_whole_tile(const std::string& in, const std::string& out,
                       std::initializer_list<const char*> more = {}) {
  tir::CudaOptions o = options(more);
  std::string error;
  EXPECT_TRUE(o.set("warp_staged_epilogue=0", &error)) << error;
  expect_cuda_pass("epilogue", in, out, o);
}

// The warp-specialized GEMM as layout leaves it, `out` of dtype `out_dtype`
// (2 stages: the operand tiles and the mbarriers take 65568 bytes).
GemmText two_stage_gemm(const std::string& out_dtype) {
  GemmText g = testing::wgmma_gemm("layout");
  g.out = out_dtype;
  g.stages = 2;
  g.a_plan = "swizzled, stages=2, offset=0, bytes=32768";
  g.b_plan = "mn_swizzled, stages=2, offset=32768, bytes=32768";
  g.loop_plan =
      "warp_specialized, stages=2, issue_ahead=2, wgmma_in_flight=1, producer_threads=128, "
      "consumer_threads=256, registers=[64, 216], mbarriers=65536";
  g.launch.replace(g.launch.find("shared_bytes=98352"), 18, "shared_bytes=65568");
  return g;
}

// `g` with the staged epilogue plan (testing::kStagedPlan) and its note.
GemmText staged(GemmText g) {
  g.epilogue_plan = testing::kStagedPlan;
  return testing::with_note(g, testing::kStagedNote);
}

// `g` with the paired epilogue plan and its note.
GemmText paired(GemmText g, const std::string& why) {
  g.epilogue_plan = "paired, why=\"" + why + "\"";
  return testing::with_note(
      g, "epilogue into out: paired stores from the accumulators, not staged: " + why);
}

// A [128][128 + 8] f16 tile at offset 0, below the mbarriers.
TEST(Epilogue, StagedThroughSharedMemory) {
  GemmText in = testing::wgmma_gemm("layout"), out = staged(in);
  expect_whole_tile(in.text(), out.text());
}

// By default a stmatrix tile is staged per warp and each slab goes out by a
// TMA box: 8 MMA warps' two 2048-byte buffers after the mbarriers (98352
// rounded up to 99328, the swizzle's 1024 bytes), the kernel's shared bytes
// 132096, and a tensor map of out whose box is one slab (64 columns x 16
// rows; testing::kWarpStagedPlan, kSlabMap).
TEST(Epilogue, PerWarpByDefault) {
  GemmText in = testing::wgmma_gemm("layout");
  GemmText out = in;
  out.epilogue_plan = testing::kWarpStagedPlan;
  out.launch.replace(out.launch.find("shared_bytes=98352"), 18, "shared_bytes=132096");
  out.launch.insert(out.launch.find("], notes"), std::string(", ") + testing::kSlabMap);
  out = testing::with_note(out, testing::kWarpStagedNote);
  EXPECT_EQ(out.text(), testing::wgmma_gemm("epilogue").text());
  expect_cuda_pass("epilogue", in.text(), out.text());
}

// With warp_tma_store=0 each warp stores its slabs itself, in 16-byte row
// chunks: one buffer a warp, 128-byte aligned (98432), no tensor map.
TEST(Epilogue, PerWarpCopyOutWithoutTmaStores) {
  GemmText in = testing::wgmma_gemm("layout");
  GemmText out = in;
  out.epilogue_plan = testing::kWarpCopyOutPlan;
  out.launch.replace(out.launch.find("shared_bytes=98352"), 18, "shared_bytes=114816");
  out = testing::with_note(out, testing::kWarpCopyOutNote);
  expect_cuda_pass("epilogue", in.text(), out.text(), options({"warp_tma_store=0"}));
}

// A persistent kernel's masked tile (not by TMA): per warp with the
// copy-out, its buffer right after the rings, and no tile region.
TEST(Epilogue, PerWarpInAPersistentKernel) {
  GemmText in = testing::wgmma_gemm("layout");
  in.launch.insert(in.launch.find(", tensor_maps"), ", persistent=1");
  in.store =
      "out[pid_m*128 + i_2, pid_n*128 + j_2] = f16(C_f[i_2, j_2]), mask=(pid_m*128 + i_2 < 2000)";
  GemmText out = in;
  out.epilogue_plan = testing::kWarpCopyOutPlan;
  out.launch.replace(out.launch.find("shared_bytes=98352"), 18, "shared_bytes=114816");
  out = testing::with_note(
      out, std::string(testing::kWarpCopyOutNote) + " (not by TMA: a masked store)");
  expect_cuda_pass("epilogue", in.text(), out.text());
}

// A store masked only by the output's bounds (an M or N tail: here rows
// below 2048 of a [2048, 2048] output, columns below 2048) goes out by TMA
// slabs too: TMA clips at the bounds itself.
TEST(Epilogue, MaskedByItsBoundsStoredByTma) {
  GemmText in = testing::wgmma_gemm("layout");
  in.store =
      "out[pid_m*128 + i_2, pid_n*128 + j_2] = f16(C_f[i_2, j_2]), mask=(pid_m*128 + i_2 < 2048 && "
      "pid_n*128 + j_2 < 2048)";
  GemmText out = in;
  out.epilogue_plan = testing::kWarpStagedPlan;
  out.launch.replace(out.launch.find("shared_bytes=98352"), 18, "shared_bytes=132096");
  out.launch.insert(out.launch.find("], notes"), std::string(", ") + testing::kSlabMap);
  out = testing::with_note(out, testing::kWarpStagedNote);
  expect_cuda_pass("epilogue", in.text(), out.text());
}

// A persistent kernel whose rings leave no room for the whole tile (here
// 198912 bytes before it, as a 4-stage 128x256 ring: the 34816-byte tile
// at 199680 would end past the 227 KiB) but room for the slabs: per warp,
// two buffers a warp at 199680, ending exactly at 232448. Without the
// per-warp option, paired stores, and the note says why.
TEST(Epilogue, PerWarpWhereOnlyTheSlabsFit) {
  GemmText in = testing::wgmma_gemm("layout");
  in.launch.insert(in.launch.find(", tensor_maps"), ", persistent=1");
  in.launch.replace(in.launch.find("shared_bytes=98352"), 18, "shared_bytes=198912");
  GemmText out = in;
  out.epilogue_plan =
      "staged, stmatrix=1, contiguous_chunks=1, pair_cast=1, offset=199680, tma_store=2, "
      "per_warp=1, slab_buffers=2";
  out.launch.replace(out.launch.find("shared_bytes=198912"), 19, "shared_bytes=232448");
  out.launch.insert(out.launch.find("], notes"), std::string(", ") + testing::kSlabMap);
  out = testing::with_note(out, testing::kWarpStagedNote);
  expect_cuda_pass("epilogue", in.text(), out.text());
  expect_whole_tile(in.text(),
                    paired(in, "its 34816-byte tile does not fit beside the persistent kernel's "
                               "rings")
                        .text());
}

// Where the warp buffers do not fit beside the kernel's shared memory
// (here 220000 bytes: 16 KiB more exceed the 227 KiB a block may have), the
// whole tile, and a note says why. Where two buffers a warp do not fit but
// one does (205000 bytes), one, and a note says so.
TEST(Epilogue, WholeTileWhereTheWarpBuffersDoNotFit) {
  GemmText in = testing::wgmma_gemm("layout");
  in.launch.replace(in.launch.find("shared_bytes=98352"), 18, "shared_bytes=220000");
  GemmText out = staged(in);
  out = testing::with_note(out,
                           "epilogue: not staged per warp (its 16384 bytes of warp buffers do not "
                           "fit beside the kernel's other shared memory)");
  expect_cuda_pass("epilogue", in.text(), out.text());
  in.launch.replace(in.launch.find("shared_bytes=220000"), 19, "shared_bytes=205000");
  out = in;
  out.epilogue_plan =
      "staged, stmatrix=1, contiguous_chunks=1, pair_cast=1, offset=205824, tma_store=2, "
      "per_warp=1, slab_buffers=1";
  out.launch.replace(out.launch.find("shared_bytes=205000"), 19, "shared_bytes=222208");
  out.launch.insert(out.launch.find("], notes"), std::string(", ") + testing::kSlabMap);
  std::string note = testing::kWarpStagedNote;
  note.replace(note.find("in two 2048-byte buffers"), 24, "in a 2048-byte buffer");
  out = testing::with_note(out, note);
  out = testing::with_note(out,
                           "epilogue: one slab buffer a warp, not two (two, 32768 bytes, do not "
                           "fit beside the kernel's other shared memory)");
  expect_cuda_pass("epilogue", in.text(), out.text());
}

// The 128x256x64 GEMM as layout leaves it (B_s 32 KiB a stage), with
// `stages` stages: A_s and B_s take 49152 bytes a stage, the mbarriers 16
// bytes a stage after them.
GemmText wide_gemm(int stages) {
  GemmText g = testing::wgmma_gemm("layout");
  g.bn = 256;
  g.stages = stages;
  const int64_t a = 16384 * stages, b = 32768 * stages;
  g.c_plan = "wgmma, operand=f16, block=[128, 256, 64], warps=[2, 1]";
  g.a_plan = fmt::format("swizzled, stages={}, offset=0, bytes={}", stages, a);
  g.b_plan = fmt::format("mn_swizzled, stages={}, offset={}, bytes={}", stages, a, b);
  g.loop_plan = fmt::format(
      "warp_specialized, stages={0}, issue_ahead={0}, wgmma_in_flight=1, producer_threads=128, "
      "consumer_threads=256, registers=[64, 216], mbarriers={1}",
      stages, a + b);
  g.b_copy =
      "tma, width=16, map=1, boxes=[({pid_n*256}, {k*64}, smem=0), ({pid_n*256 + 64}, {k*64}, "
      "smem=4096), ({pid_n*256 + 128}, {k*64}, smem=8192), ({pid_n*256 + 192}, {k*64}, "
      "smem=12288)], bytes=32768, reason=\"affine 64x256 tile of y, 16-byte aligned base and "
      "strides: TMA\"";
  g.launch.replace(g.launch.find("shared_bytes=98352"), 18,
                   fmt::format("shared_bytes={}", a + b + 16 * stages));
  return g;
}

// slab_buffers_all (on by default): in a one-tile kernel at BLOCK_N 256
// each MMA warp stores 4 slabs, and each gets a buffer of its own where
// they fit (3 stages: 4 buffers a warp after the 147504 bytes of rings and
// mbarriers, rounded up to 148480, end at 214016). Two where they do not
// (4 stages: 196672 bytes before them), in a persistent kernel (its
// tile's slabs, where the whole tile does not fit), where four
// would cost a block an SM (a kernel of 70000 bytes runs two blocks an SM
// with two buffers a warp, one with four), at BLOCK_N 128 (2 slabs a warp)
// and with the option off.
TEST(Epilogue, SlabBuffersAllGivesEachSlabABufferWhereTheyFit) {
  auto per_warp = [](const GemmText& in, int64_t offset, int buffers) {
    GemmText out = in;
    out.epilogue_plan = fmt::format(
        "staged, stmatrix=1, contiguous_chunks=1, pair_cast=1, offset={}, tma_store=2, "
        "per_warp=1, slab_buffers={}",
        offset, buffers);
    const size_t at = out.launch.find("shared_bytes=");
    out.launch.replace(at, out.launch.find(',', at) - at,
                       fmt::format("shared_bytes={}", offset + 8 * buffers * 2048));
    out.launch.insert(out.launch.find("], notes"), std::string(", ") + testing::kSlabMap);
    std::string note = testing::kWarpStagedNote;
    note.replace(note.find("two 2048-byte buffers"), 21,
                 tir::warp_slab_buffers_words(buffers));
    return testing::with_note(out, note);
  };
  const GemmText three = wide_gemm(3);
  expect_cuda_pass("epilogue", three.text(), per_warp(three, 148480, 4).text());
  expect_cuda_pass("epilogue", three.text(), per_warp(three, 148480, 2).text(),
                   options({"slab_buffers_all=0"}));
  const GemmText four = wide_gemm(4);
  expect_cuda_pass("epilogue", four.text(), per_warp(four, 197632, 2).text());
  // (165000 bytes: the whole 67584-byte tile does not fit after them, four
  // buffers a warp would.)
  GemmText persistent = three;
  persistent.launch.insert(persistent.launch.find(", tensor_maps"), ", persistent=1");
  persistent.launch.replace(persistent.launch.find("shared_bytes=147504"), 19,
                            "shared_bytes=165000");
  expect_cuda_pass("epilogue", persistent.text(), per_warp(persistent, 165888, 2).text());
  GemmText two_blocks = wide_gemm(1);
  two_blocks.launch.replace(two_blocks.launch.find("shared_bytes=49168"), 18,
                            "shared_bytes=70000");
  expect_cuda_pass("epilogue", two_blocks.text(), per_warp(two_blocks, 70656, 2).text());
  const GemmText narrow = testing::wgmma_gemm("layout");
  expect_cuda_pass("epilogue", narrow.text(), testing::wgmma_gemm("epilogue").text());
}

// An f32 output has no stmatrix: the whole tile.
TEST(Epilogue, WholeTileForF32Outputs) {
  GemmText in = testing::wgmma_gemm("layout");
  in.out = "f32";
  GemmText out = in;
  out.epilogue_plan = "staged, pitch=132, contiguous_chunks=1";
  out = testing::with_note(out,
                           "epilogue into out: staged through shared memory, stored in 16-byte "
                           "row chunks (proved contiguous and aligned)");
  expect_cuda_pass("epilogue", in.text(), out.text());
}

// A persistent kernel's staged tile has a region of its own after the
// rest (the producer refills the rings meanwhile). Unmasked, into a
// row-major 2-D output at (pid_m*128 + i, pid_n*128 + j): it goes out by
// TMA, a 128-byte swizzled box of 64 columns x 128 rows a strip, so the
// region is 1024-byte aligned (99328 after the 98352 bytes before it) and
// the output gets a tensor map; with the option off, the 16-byte copy-out
// in a 128-byte aligned region.
TEST(Epilogue, PersistentTileStoredByTma) {
  GemmText in = testing::wgmma_gemm("layout");
  in.launch.insert(in.launch.find(", tensor_maps"), ", persistent=1");
  GemmText out = in;
  out.epilogue_plan =
      "staged, pitch=136, stmatrix=1, contiguous_chunks=1, pair_cast=1, offset=99328, "
      "tma_store=2";
  out.launch.replace(out.launch.find("shared_bytes=98352"), 18, "shared_bytes=134144");
  out.launch.insert(out.launch.find("], notes"),
                    ", (param=2, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 128], "
                    "swizzle=128)");
  out = testing::with_note(out,
                           "epilogue into out: staged through shared memory by stmatrix, f32 "
                           "pairs cast together, stored by TMA (a 128-byte swizzled box a "
                           "64-column strip)");
  expect_whole_tile(in.text(), out.text());
  // (By default too: where the persistent kernel can store the tile whole
  // by TMA, it is not staged per warp.)
  expect_cuda_pass("epilogue", in.text(), out.text());
  GemmText copy_out = in;
  copy_out.epilogue_plan =
      "staged, pitch=136, stmatrix=1, contiguous_chunks=1, pair_cast=1, offset=98432";
  copy_out.launch.replace(copy_out.launch.find("shared_bytes=98352"), 18,
                          "shared_bytes=133248");
  copy_out = testing::with_note(copy_out, testing::kStagedNote);
  expect_whole_tile(in.text(), copy_out.text(), {"tma_store_epilogue=0"});
}

// A masked store (M or N not a multiple of the tile) keeps the copy-out,
// and the note says why.
TEST(Epilogue, MaskedPersistentTileNotByTma) {
  GemmText in = testing::wgmma_gemm("layout");
  in.launch.insert(in.launch.find(", tensor_maps"), ", persistent=1");
  in.store =
      "out[pid_m*128 + i_2, pid_n*128 + j_2] = f16(C_f[i_2, j_2]), mask=(pid_m*128 + i_2 < 2000)";
  GemmText out = in;
  out.epilogue_plan =
      "staged, pitch=136, stmatrix=1, contiguous_chunks=1, pair_cast=1, offset=99328";
  out.launch.replace(out.launch.find("shared_bytes=98352"), 18, "shared_bytes=134144");
  out = testing::with_note(out,
                           "epilogue into out: staged through shared memory by stmatrix, f32 "
                           "pairs cast together, stored in 16-byte row chunks (proved contiguous "
                           "and aligned) (not by TMA: a masked store)");
  expect_whole_tile(in.text(), out.text());
}

TEST(Epilogue, PairedWhenTheOptionIsOff) {
  GemmText in = testing::wgmma_gemm("layout");
  expect_whole_tile(in.text(), paired(in, "the staged_epilogue option is off").text(),
                    {"staged_epilogue=0"});
}

// The staged tile must fit below the mbarriers: an f16 tile (34816 bytes)
// does, an f32 one ([128][132] f32, 67584 bytes) does not.
TEST(Epilogue, PairedWhenTheTileDoesNotFitBelowTheMbarriers) {
  GemmText in = two_stage_gemm("f16"), out = staged(in);
  expect_whole_tile(in.text(), out.text());
  in = two_stage_gemm("f32");
  expect_whole_tile(in.text(),
                   paired(in, "its 67584-byte tile exceeds the kernel's shared memory").text());
}

// Without a warp-specialized loop the room is the kernel's shared bytes:
// an in-order mma.sync loop has 16 KiB.
TEST(Epilogue, PairedWhenTheTileExceedsTheSharedMemory) {
  GemmText in = testing::mma_sync_gemm(128, 1);
  in.launch = "threads=256, shared_bytes=16384, shared_align=128";
  in.a_plan = "swizzled, stages=1, offset=0, bytes=8192";
  in.b_plan = "swizzled, stages=1, offset=8192, bytes=8192";
  in.loop_plan = "in_order, stages=1, issue_ahead=0, why=\"one stage\"";
  expect_cuda_pass("epilogue", in.text(),
                   paired(in, "its 34816-byte tile exceeds the kernel's shared memory").text(), {},
                   "sm_80");
}

// The copy-out recomputes the store's address: it may not read memory (a
// scatter's index).
TEST(Epilogue, PairedWhenTheStoreAddressReadsMemory) {
  GemmText in = testing::wgmma_gemm("layout");
  in.params = testing::kIndexParam;
  in.store = "out[index[pid_m*128 + i_2], pid_n*128 + j_2] = f16(C_f[i_2, j_2])";
  expect_whole_tile(in.text(),
                   paired(in, "the store's address or mask reads memory").text());
}

// A value that loads memory (a bias) is not staged: such epilogues
// spilled. In a let of the nest or in the stored value itself.
TEST(Epilogue, PairedWhenAValueLoadsMemory) {
  const std::string why = "a value of the nest loads memory (staged, such epilogues spilled)";
  GemmText in = testing::wgmma_gemm("layout");
  in.params = "  bias: global readonly f32[2048] strides [1] align 16,\n";
  in.store =
      "let v = C_f[i_2, j_2] + bias[pid_n*128 + j_2]\n"
      "    out[pid_m*128 + i_2, pid_n*128 + j_2] = f16(select(v < 0.0, 0.0, v))";
  expect_whole_tile(in.text(), paired(in, why).text());
  in.store = "out[pid_m*128 + i_2, pid_n*128 + j_2] = f16(C_f[i_2, j_2] + bias[pid_n*128 + j_2])";
  expect_whole_tile(in.text(), paired(in, why).text());
}

// A value that reads only the accumulator (relu(x @ y)) is staged like x @ y.
TEST(Epilogue, StagedWhenValuesReadOnlyTheAccumulator) {
  GemmText in = testing::wgmma_gemm("layout");
  in.store =
      "let v = C_f[i_2, j_2]\n"
      "    out[pid_m*128 + i_2, pid_n*128 + j_2] = f16(select(v < 0.0, 0.0, v))";
  GemmText out = staged(in);
  expect_whole_tile(in.text(), out.text());
}

// The staged plan of `g` without the fields the test varies: by
// stmatrix, and pair_cast unless `pair_cast` is false.
GemmText staged_with(GemmText g, const std::string& chunks, const std::string& note_chunks,
                     bool pair_cast = true) {
  g.epilogue_plan = std::string("staged, pitch=136, stmatrix=1") + chunks +
                    (pair_cast ? ", pair_cast=1" : "");
  return testing::with_note(g, std::string("epilogue into out2: staged through shared memory by "
                                           "stmatrix") +
                                   (pair_cast ? ", f32 pairs cast together" : "") +
                                   ", stored in 16-byte row chunks" + note_chunks);
}

// The epilogue stores into `out2` (declared by `param`) at `index`, under
// `mask` ("" for none).
GemmText storing_out2(const std::string& param, const std::string& index,
                      const std::string& mask = "") {
  GemmText g = testing::wgmma_gemm("layout");
  g.params = "  out2: " + param + ",\n";
  g.store = "out2[" + index + "] = f16(C_f[i_2, j_2])" + (mask.empty() ? "" : ", mask=(" + mask + ")");
  return g;
}

// The copy-out's row chunks (8 f16 columns) are proved contiguous and
// 16-byte aligned by axis_info: along j_2 the element offset
// (pid_m*128 + i_2)*2048 + pid_n*128 + j_2 steps by 1 over the tile's 128
// columns from a multiple of 128 elements, and out is 16-byte aligned.
TEST(Epilogue, ProvedChunksOfARowMajorOutput) {
  GemmText in = testing::wgmma_gemm("layout");
  GemmText out = staged(in);
  EXPECT_NE(out.epilogue_plan.find("contiguous_chunks=1"), std::string::npos);
  expect_whole_tile(in.text(), out.text());
  // The proof off: the copy-out tests each chunk at run time.
  GemmText off = testing::with_note(
      in, "epilogue into out: staged through shared memory by stmatrix, f32 pairs cast together, "
          "stored in 16-byte row chunks");
  off.epilogue_plan = "staged, pitch=136, stmatrix=1, pair_cast=1";
  expect_whole_tile(in.text(), off.text(), {"proved_epilogue_chunks=0"});
}

// Not proved: a row stride of 2044 elements (not a multiple of 8: the
// rows start 8-byte aligned only); a transposed output (consecutive columns
// 2048 elements apart); an output only 8-byte aligned.
TEST(Epilogue, NoProvedChunksWhereTheAddressesDoNotAllowThem) {
  for (const auto& [param, index] : std::vector<std::pair<std::string, std::string>>{
           {"global f16[2048, 2044] strides [2044, 1] align 16",
            "pid_m*128 + i_2, pid_n*128 + j_2"},
           {"global f16[2048, 2048] strides [1, 2048] align 16",
            "pid_m*128 + i_2, pid_n*128 + j_2"},
           {"global f16[2048, 2048] strides [2048, 1] align 8",
            "pid_m*128 + i_2, pid_n*128 + j_2"},
           {"global f16[2048, 4096] strides [4096, 1] align 16",
            "pid_m*128 + i_2, pid_n*128 + j_2 + 4"}}) {
    SCOPED_TRACE(param + " at " + index);
    GemmText in = storing_out2(param, index);
    expect_whole_tile(in.text(), staged_with(in, "", "").text());
  }
}

// A masked store (an N tail): with 2040 columns the mask n < 2040 is
// constant on every 8-column chunk (2040 is a multiple of 8): one mask a
// chunk. With 2044 columns of a 2048-element row it changes inside the
// chunk at column 2044: a mask per element, the chunk stored whole when
// all 8 are true.
TEST(Epilogue, ProvedChunksUnderAMask) {
  GemmText in = storing_out2("global f16[2048, 2040] strides [2040, 1] align 16",
                             "pid_m*128 + i_2, pid_n*128 + j_2", "pid_n*128 + j_2 < 2040");
  expect_whole_tile(in.text(),
                   staged_with(in, ", contiguous_chunks=1", " (proved contiguous and aligned)")
                       .text());
  in = storing_out2("global f16[2048, 2044] strides [2048, 1] align 16",
                    "pid_m*128 + i_2, pid_n*128 + j_2", "pid_n*128 + j_2 < 2044");
  expect_whole_tile(in.text(),
                   staged_with(in, ", contiguous_chunks=1, chunk_mask_varies=1",
                               " (proved contiguous and aligned; masked per element)")
                       .text());
}

// The pair cast needs a cast of an f32 value to f16 / bf16: an f32 output
// (staged without stmatrix, no cast) has none; a bf16 output has it; the
// option off, none.
TEST(Epilogue, PairCastOfF32ToF16OrBf16) {
  GemmText in = testing::wgmma_gemm("layout");
  in.out = "f32";
  GemmText out = testing::with_note(
      in, "epilogue into out: staged through shared memory, stored in 16-byte row chunks (proved "
          "contiguous and aligned)");
  out.epilogue_plan = "staged, pitch=132, contiguous_chunks=1";
  expect_whole_tile(in.text(), out.text());

  in = testing::wgmma_gemm("layout");
  in.out = "bf16";
  expect_whole_tile(in.text(), staged(in).text());

  in = testing::wgmma_gemm("layout");
  out = testing::with_note(in,
                           "epilogue into out: staged through shared memory by stmatrix, stored "
                           "in 16-byte row chunks (proved contiguous and aligned)");
  out.epilogue_plan = "staged, pitch=136, stmatrix=1, contiguous_chunks=1";
  expect_whole_tile(in.text(), out.text(), {"pair_cast_epilogue=0"});
}

// A SIMT tile, or a nest that is not one global store per element:
// element by element.
TEST(Epilogue, PerElement) {
  GemmText in;
  in.dtype = in.out = "f32";
  in.bk = 32;
  in.launch = "threads=256, shared_bytes=98304, shared_align=128";
  in.a_plan = "row_major, stages=3, offset=0, bytes=49152";
  in.b_plan = "row_major, stages=3, offset=49152, bytes=49152";
  in.c_plan = "simt_fma, operand=f32, block=[128, 128, 32], threads=256";
  in.a_copy = in.b_copy = "cp_async, width=16";
  in.loop_plan = "ring, stages=3, issue_ahead=2";
  GemmText out = in;
  out.epilogue_plan = "per_element";
  expect_cuda_pass("epilogue", in.text(), out.text(), {}, "sm_80");

  in = testing::wgmma_gemm("layout");
  in.params = "  out2: global f16[2048, 2048] strides [2048, 1] align 16,\n";
  in.store =
      "out[pid_m*128 + i_2, pid_n*128 + j_2] = f16(C_f[i_2, j_2])\n"
      "    out2[pid_m*128 + i_2, pid_n*128 + j_2] = f16(C_f[i_2, j_2])";
  out = in;
  out.epilogue_plan = "per_element";
  expect_whole_tile(in.text(), out.text());
}

}  // namespace
}  // namespace tilefuse::codegen
