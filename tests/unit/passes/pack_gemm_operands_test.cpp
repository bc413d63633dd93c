// pack_gemm_operands: which staged gemm operands the CPU gemm packs from
// their source (printed IR in, printed IR out), and which stay staged.
#include "passes/pack_gemm_operands.h"

#include <gtest/gtest.h>

#include <string>

#include "pass_test_util.h"
#include "tir/parser.h"
#include "tir/printer.h"

namespace tilefuse::passes {
namespace {

using testing::expect_pass;

// A GEMM kernel as the CPU pipeline leaves it before this pass: A's rows
// gathered through `rows` (masked off where the index was out of range),
// K tails on both operands, an N tail on B. The copies of A and B and one
// extra statement after the loop are parameters.
std::string gemm_text(const std::string& copy_a, const std::string& copy_b,
                      const std::string& after = "") {
  return "kernel gemm0(\n"
         "  x: global readonly f16[64, 40] strides [40, 1] align 16,\n"
         "  y: global readonly f16[40, 24] strides [24, 1] align 16,\n"
         "  index: global readonly i64[32] strides [1] align 16,\n"
         "  out: global f32[32, 32] strides [32, 1] align 16,\n"
         ") grid(pid: 1) {\n"
         "  alloc A_s: shared f16[32, 16]\n"
         "  alloc B_s: shared f16[16, 32]\n"
         "  alloc C_f: fragment f32[32, 32]\n"
         "  fill(C_f, 0.0)\n"
         "  alloc rows: shared i64[32]\n"
         "  copy (i: 32) rows[i] = select(index[i] < 0_i64, index[i] + 64_i64, index[i]) "
         "plan(direct, width=8)\n"
         "  for k in pipelined(0, 3, stages=1) {\n"
         "    " + copy_a + "\n"
         "    " + copy_b + "\n"
         "    gemm(A_s, B_s, C_f)\n"
         "  }\n" +
         after +
         "  for i_5 in parallel(0, 32) {\n"
         "    for j_2 in parallel(0, 32) {\n"
         "      out[i_5, j_2] = C_f[i_5, j_2]\n"
         "    }\n"
         "  }\n"
         "}\n";
}

const std::string kCopyA =
    "copy (i_1: 32, j: 16) A_s[i_1, j] = load(x, [rows[i_1], k*16 + j], mask=(k*16 + j < 40 && "
    "rows[i_1] >= 0_i64)) plan(direct, width=2)";
const std::string kCopyB =
    "copy (i_2: 16, j_1: 32) B_s[i_2, j_1] = load(y, [k*16 + i_2, j_1], mask=(k*16 + i_2 < 40 && "
    "j_1 < 24)) plan(direct, width=2)";

std::string packed(std::string copy, const std::string& reason) {
  const std::string from = "plan(direct, width=2)";
  copy.replace(copy.find(from), from.size(),
               "plan(gemm_pack, width=2, reason=\"cpu target: the gemm packs this operand "
               "straight from " +
                   reason + "; nothing is staged\")");
  return copy;
}

const std::string kPackedA = packed(kCopyA, "`x`, row by row through the gathered row index");
const std::string kPackedB = packed(kCopyB, "`y`, row by row");

tir::Kernel run(const tir::Kernel& k) {
  return pack_gemm_operands(k);
}

TEST(PackGemmOperands, GatheredAndPlainOperandsPackFromTheirSource) {
  expect_pass(run, gemm_text(kCopyA, kCopyB), gemm_text(kPackedA, kPackedB));
  // The plan round-trips through the text form.
  const std::string text = gemm_text(kPackedA, kPackedB);
  EXPECT_EQ(tir::print(tir::parse_kernel(text)), text);
}

TEST(PackGemmOperands, ReportsTheNewMode) {
  CopyReport report;
  report.copies = {{"rows", "direct", 8, "r"}, {"A_s", "direct", 2, "r"}, {"B_s", "direct", 2, "r"}};
  pack_gemm_operands(tir::parse_kernel(gemm_text(kCopyA, kCopyB)), &report);
  EXPECT_EQ(report.copies[0].mode, "direct");
  EXPECT_EQ(report.copies[1].mode, "gemm_pack");
  EXPECT_EQ(report.copies[2].mode, "gemm_pack");
  EXPECT_NE(report.copies[1].reason.find("gathered row index"), std::string::npos);
}

// A tile read by anything but its gemm, or not a contiguous prefix of its
// source row, stays staged; the other operand is still packed.
TEST(PackGemmOperands, StagesWhatTheGemmCannotPackFromTheSource) {
  // A_s also read after the loop.
  expect_pass(run, gemm_text(kCopyA, kCopyB, "  out[0, 0] = f32(A_s[0, 0])\n"),
              gemm_text(kCopyA, kPackedB, "  out[0, 0] = f32(A_s[0, 0])\n"));
  // Columns of A two apart (not contiguous along j).
  const std::string strided =
      "copy (i_1: 32, j: 16) A_s[i_1, j] = load(x, [rows[i_1], j*2], mask=(rows[i_1] >= 0_i64)) "
      "plan(direct, width=2)";
  expect_pass(run, gemm_text(strided, kCopyB), gemm_text(strided, kPackedB));
  // The inner var in the row index: a transposing copy.
  const std::string transposing =
      "copy (i_2: 16, j_1: 32) B_s[i_2, j_1] = load(y, [j_1, i_2], mask=(j_1 < 40 && i_2 < 24)) "
      "plan(direct, width=2)";
  expect_pass(run, gemm_text(kCopyA, transposing), gemm_text(kPackedA, transposing));
  // A mask that is not a prefix of the row.
  const std::string holes =
      "copy (i_2: 16, j_1: 32) B_s[i_2, j_1] = load(y, [k*16 + i_2, j_1], mask=(j_1%2 == 0 && "
      "j_1 < 24)) plan(direct, width=2)";
  expect_pass(run, gemm_text(kCopyA, holes), gemm_text(kPackedA, holes));
  // A value computed from the load (a prologue): the tile holds its result.
  const std::string scaled =
      "copy (i_2: 16, j_1: 32) B_s[i_2, j_1] = load(y, [k*16 + i_2, j_1], mask=(k*16 + i_2 < 40 "
      "&& j_1 < 24))*2.0_f16 plan(direct, width=2)";
  expect_pass(run, gemm_text(kCopyA, scaled), gemm_text(kPackedA, scaled));
  // A copy that writes only part of its tile.
  const std::string part =
      "copy (i_2: 8, j_1: 32) B_s[i_2, j_1] = load(y, [k*16 + i_2, j_1], mask=(k*16 + i_2 < 40 && "
      "j_1 < 24)) plan(direct, width=2)";
  expect_pass(run, gemm_text(kCopyA, part), gemm_text(kPackedA, part));
}

// A gathered row loaded inside the copy, masked by the copy's K bound too
// (the template's form without a K loop): that conjunct is dropped from the
// row's load (the copy's own mask keeps it), so the row is one per row.
TEST(PackGemmOperands, DropsTheRowLoadsConjunctsTheCopyMaskHas) {
  const std::string a =
      "copy (i_1: 32, j: 16) A_s[i_1, j] = load(x, [load(index, [i_1], mask=(i_1 < 30 && k*16 + "
      "j < 40)), k*16 + j], mask=(i_1 < 30 && k*16 + j < 40)) plan(direct, width=2)";
  const std::string packed_a = packed(
      "copy (i_1: 32, j: 16) A_s[i_1, j] = load(x, [load(index, [i_1], mask=(i_1 < 30)), k*16 + "
      "j], mask=(i_1 < 30 && k*16 + j < 40)) plan(direct, width=2)",
      "`x`, row by row through the gathered row index");
  expect_pass(run, gemm_text(a, kCopyB), gemm_text(packed_a, kPackedB));
  // A conjunct over j the copy's mask does not have stays, and so does
  // the staging.
  const std::string other =
      "copy (i_1: 32, j: 16) A_s[i_1, j] = load(x, [load(index, [i_1], mask=(i_1 < 30 && j < 8)), "
      "k*16 + j], mask=(i_1 < 30 && k*16 + j < 40)) plan(direct, width=2)";
  expect_pass(run, gemm_text(other, kCopyB), gemm_text(other, kPackedB));
}

// Without lower_copies' plan (or on plans it did not make `direct`)
// nothing changes: the pass re-plans CPU copies only.
TEST(PackGemmOperands, OnlyRePlansDirectCopies) {
  std::string a = kCopyA, b = kCopyB;
  const std::string from = " plan(direct, width=2)";
  a.erase(a.find(from), from.size());
  b.erase(b.find(from), from.size());
  expect_pass(run, gemm_text(a, b), gemm_text(a, b));
}

}  // namespace
}  // namespace tilefuse::passes
