// register_a: the gathered A operand loaded by the MMA warps into their
// wgmma A fragments; B's TMA map and boxes read K in the fragments' order.
#include <gtest/gtest.h>

#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::cuda_pass;
using testing::expect_cuda_pass;
using testing::GemmText;
using testing::options;

// hoisted_gather() as register_a leaves it: A's copy a fragment copy whose
// addresses read the index itself (the staging copy gone), B's TMA box and
// map reading K in the fragments' order.
GemmText register_a_gather() {
  const GemmText in = testing::hoisted_gather();
  GemmText out = in;
  // (the staging copy goes: nothing reads index_rows once the fragment
  // addresses and A's value read the index itself)
  out.allocs = "";
  out.prologue = "  barrier()\n";
  out.a_value = "x[index[pid_m*128 + i], k*64 + j]";
  out.a_copy =
      "fragment, width=16, hoist=(indices=[{index[pid_m*128 + i]}, {j}], step=64), "
      "reason=\"the MMA warps load their wgmma A fragments (two rows, two 16-byte chunks each a "
      "k-tile, 3 k-tiles ahead) by ld.global.nc: A never enters shared memory (register_a; was: "
      ")\"";
  // B: boxes at (n, 0, 0, 0, k*64/32), the map 5-D over the same bytes
  std::string b = in.b_copy;
  for (size_t at = 0; (at = b.find("{k*64}", at)) != std::string::npos; at += 20)
    b.replace(at, 6, "{0}, {0}, {0}, {k*64/32}");
  const std::string reason =
      "reason=\"affine 64x128 tile of y, 16-byte aligned base and strides: TMA";
  b.replace(b.find(reason), reason.size(),
            reason + "; K permuted inside each 64-row k-tile by a 5-D box (register_a)");
  out.b_copy = b;
  out.launch.replace(out.launch.find("dims=[2048, 2048], strides=[4096], box=[64, 64]"),
                     std::string_view("dims=[2048, 2048], strides=[4096], box=[64, 64]").size(),
                     "dims=[2048, 2, 4, 4, 64], strides=[4096, 32768, 8192, 131072], box=[64, 2, "
                     "4, 4, 2]");
  out.loop_plan += ", register_a=3";
  return testing::with_note(
      out,
      "register A: the MMA warps load A_s's rows into their wgmma A fragments (3 k-tiles ahead, a "
      "ring of 4) and wgmma reads A from registers; B_s's TMA box reads K in the fragments' "
      "order; index_rows no longer staged in shared memory");
}

TEST(RegisterA, FragmentsForTheGatheredRowsAndBsKPermuted) {
  const GemmText in = testing::hoisted_gather();
  const GemmText out = register_a_gather();
  expect_cuda_pass("register_a", in.text(), out.text(), options({"register_a=1"}));

  // fragment_no_allocate: the same, the copy's loads by .L1::no_allocate.
  GemmText na = out;
  na.a_copy.replace(na.a_copy.find("fragment, width=16, "), 20,
                    "fragment, width=16, no_allocate=1, ");
  expect_cuda_pass("register_a", in.text(), na.text(),
                   options({"register_a=1", "fragment_no_allocate=1"}));

  // fragment_l2_prefetch: the copy's loads prefetch 256 bytes into L2.
  GemmText l2 = out;
  l2.a_copy.replace(l2.a_copy.find("fragment, width=16, "), 20,
                    "fragment, width=16, l2_prefetch=256, ");
  expect_cuda_pass("register_a", in.text(), l2.text(),
                   options({"register_a=1", "fragment_l2_prefetch=1"}));

  // fragment_word_loads: the copy's k-tiles by 32-bit loads into wgmma's
  // register order, unpredicated.
  GemmText words = out;
  words.a_copy.replace(words.a_copy.find("fragment, width=16, "), 20,
                       "fragment, width=16, word_loads=1, ");
  const std::string_view by = "by ld.global.nc:";
  words.a_copy.replace(words.a_copy.find(by), by.size(),
                       "by 32-bit ld.global, each word straight into its register of wgmma's "
                       "order, a masked row reading a zero row:");
  expect_cuda_pass("register_a", in.text(), words.text(),
                   options({"register_a=1", "fragment_word_loads=1"}));
}

// In a 2-block multicast cluster (the pairs share B's boxes): the same, B's
// boxes permuted and still multicast.
TEST(RegisterA, KeepsBsMulticastInACluster) {
  auto clustered = [](GemmText g) {
    g.b_copy.replace(g.b_copy.find(", reason="), 0, ", multicast=1");
    g.launch.insert(g.launch.find(", tensor_maps"), ", cluster=2");
    return g;
  };
  const GemmText in = clustered(testing::hoisted_gather());
  expect_cuda_pass("register_a", in.text(), clustered(register_a_gather()).text(),
                   options({"register_a=1"}));
}

// The prologue's index checks of A's rows become the fragment copy's row
// checks (each MMA thread checks the rows it loads); a check over other
// rows, or one that reads what is not staged from the inputs, stays, and
// so does the staging its reads need.
TEST(RegisterA, AbsorbsTheRowChecksOfTheGatheredRows) {
  GemmText in = testing::hoisted_gather();
  const std::string check =
      "check(v >= 0_i64 && v < 2048_i64, code=1, msg=\"index {} of row {}\", args=[v, "
      "pid_m*128 + r_1])";
  in.prologue +=
      "  for r_1 in parallel(0, 128) {\n"
      "    let v = index_rows[r_1]\n"
      "    if pid_m*128 + r_1 < 2000 {\n"
      "      " + check + "\n"
      "    }\n"
      "  }\n";
  const auto pass = cuda_pass("register_a", options({"register_a=1"}));
  const tir::Kernel got = pass(tir::parse_kernel(in.text()));
  EXPECT_EQ(tir::verify_errors(got), std::vector<std::string>{});
  const std::string printed = tir::print(got);
  EXPECT_EQ(printed.find("for r_1"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("alloc index_rows"), std::string::npos) << printed;
  EXPECT_NE(printed.find(
                "row_checks=[(cond={pid_m*128 + i >= 2000 || index[pid_m*128 + i] >= 0_i64 && "
                "index[pid_m*128 + i] < 2048_i64}, code=1, msg=\"index {} of row {}\", "
                "args=[{index[pid_m*128 + i]}, {pid_m*128 + i}])]"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("each MMA thread checks its rows' indices where it computes their "
                         "addresses (the prologue's checks, absorbed); index_rows no longer "
                         "staged in shared memory"),
            std::string::npos)
      << printed;
  // Over 64 rows (not A's 128): the check stays, reading index_rows, which
  // stays staged.
  GemmText half = in;
  half.prologue.replace(half.prologue.find("parallel(0, 128)"), 16, "parallel(0, 64)");
  const std::string kept = tir::print(pass(tir::parse_kernel(half.text())));
  EXPECT_NE(kept.find("for r_1 in parallel(0, 64)"), std::string::npos) << kept;
  EXPECT_NE(kept.find("copy (r: 128) index_rows[r]"), std::string::npos) << kept;
  EXPECT_EQ(kept.find("row_checks"), std::string::npos) << kept;
}

// Off by default; with it on, a loop it does not fit is left as it was and
// the note says why.
TEST(RegisterA, OnlyWithTheOptionAndWhereItFits) {
  const GemmText in = testing::hoisted_gather();
  expect_cuda_pass("register_a", in.text(), in.text());
  GemmText unhoisted = in;
  unhoisted.a_copy = "cp_async, width=16, cache_all=1";
  expect_cuda_pass("register_a", unhoisted.text(),
                   testing::with_note(unhoisted,
                                      "no register A: A's copy is not a hoisted 16-byte cp.async "
                                      "of one k-tile an iteration with no per-iteration mask")
                       .text(),
                   options({"register_a=1"}));
  // B's rows from an offset that is not a multiple of 32 (a slice w[16:]):
  // the permutation is relative to each box's first row.
  GemmText sliced = in;
  for (size_t at = 0; (at = sliced.b_copy.find("{k*64}", at)) != std::string::npos; at += 10)
    sliced.b_copy.replace(at, 6, "{k*64 + 16}");
  expect_cuda_pass("register_a", sliced.text(),
                   testing::with_note(sliced,
                                      "no register A: B's K coordinate is not proved a multiple of "
                                      "32 (a slice of its rows at another offset)")
                       .text(),
                   options({"register_a=1"}));
  // Without setmaxnreg's budgets: nothing (not even a note), unless the
  // kernel's config asked (the attr REGISTER_A): then the note says why.
  expect_cuda_pass("register_a", in.text(), in.text(), options({"register_a=1", "setmaxnreg=0"}));
  GemmText asked = in;
  asked.attrs = "REGISTER_A = 1, ";
  expect_cuda_pass(
      "register_a", asked.text(),
      testing::with_note(asked, "no register A: no register budgets (setmaxnreg is off)").text(),
      options({"setmaxnreg=0"}));
  GemmText wide = in;
  wide.c_plan = "wgmma, operand=f16, block=[128, 128, 64], warps=[1, 2]";
  expect_cuda_pass("register_a", wide.text(),
                   testing::with_note(wide,
                                      "no register A: the accumulator is not a wgmma tile of "
                                      "16-bit operands, BLOCK_K 64, 64 rows a warpgroup and one "
                                      "warpgroup across N")
                       .text(),
                   options({"register_a=1"}));
}

}  // namespace
}  // namespace tilefuse::codegen
