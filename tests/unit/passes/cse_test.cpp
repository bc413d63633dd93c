// cse: text in -> eliminate_common_subexpressions -> text out.
#include "passes/cse.h"

#include <gtest/gtest.h>

#include "../tir/test_kernels.h"
#include "pass_test_util.h"

namespace tilefuse::passes {
namespace {

using testing::expect_body;

auto cse = [](const tir::Kernel& k) { return eliminate_common_subexpressions(k); };

TEST(Cse, WithinOneStatement) {
  expect_body(cse, "  iout[n*4 + 1] = (n*4 + 1)*2\n", "  let cse = n*4 + 1\n  iout[cse] = cse*2\n");
}

TEST(Cse, AcrossStraightLineStatements) {
  // x is a read-only input: nothing between the uses writes it.
  expect_body(cse, R"(  out[0] = x[n + 1] + 1.0
  iout[0] = 7
  out[1] = x[n + 1]*2.0
)",
              R"(  let cse = x[n + 1]
  out[0] = cse + 1.0
  iout[0] = 7
  out[1] = cse*2.0
)");
}

TEST(Cse, LoadNotMovedAcrossAStoreToItsBuffer) {
  const char* body = R"(  alloc s: local f32[4]
  s[0] = 1.0
  out[0] = s[n]*2.0
  s[1] = 3.0
  out[1] = s[n]*2.0
)";
  expect_body(cse, body, body);
  // The index arithmetic inside is still shared; the loads are not.
  expect_body(cse, R"(  alloc s: local f32[4]
  out[0] = s[n%4]
  s[1] = 3.0
  out[1] = s[n%4]
)",
              R"(  alloc s: local f32[4]
  let cse = n%4
  out[0] = s[cse]
  s[1] = 3.0
  out[1] = s[cse]
)");
}

// Equal candidates (the same first statement and size) go in the order
// they are first met, whatever the hash table's order: the emitted names
// were different from run to run before (the goldens of session 22).
TEST(Cse, EqualCandidatesInTheOrderFirstMet) {
  expect_body(cse, "  iout[n + 1] = (n + 2)*(n + 1) + (n + 2)\n",
              "  let cse = n + 1\n  let cse_1 = n + 2\n  iout[cse] = cse_1*cse + cse_1\n");
}

TEST(Cse, TrivialLeavesAndHooksStay) {
  const char* body = R"(  iout[n] = n + n
  out[n] = load_input<f32>("A", [n]) + load_input<f32>("A", [n])
)";
  expect_body(cse, body, body);
}

TEST(Cse, MasksStayInPlace) {
  expect_body(cse, R"(  out[0] = load(x, [n*2], mask=(n*2 < 256)), mask=(n*2 < 256)
)",
              R"(  let cse = n*2
  out[0] = load(x, [cse], mask=(cse < 256)), mask=(cse < 256)
)");
}

TEST(Cse, CopyKeepsExpressionsOfItsOwnVars) {
  expect_body(cse, R"(  alloc s: shared f32[4]
  copy (i: 4) s[i] = x[i*2 + n*3] + x[i*2] + x[n*3]
)",
              R"(  alloc s: shared f32[4]
  let cse = n*3
  copy (i: 4) s[i] = x[i*2 + cse] + x[i*2] + x[cse]
)");
}

TEST(Cse, NestedRepeatsAreBoundInsideOut) {
  expect_body(cse, "  iout[0] = n*n + n*n + (n*n + n*n)\n",
              "  let cse = n*n\n  let cse_1 = cse + cse\n  iout[0] = cse_1 + cse_1\n");
}

TEST(Cse, LoopBoundsAndBodies) {
  // A loop body is a block of its own: repeats inside it are bound there;
  // a repeat of the loop header inside the body is left to licm.
  expect_body(cse, R"(  for i in serial(0, (n + 3)/4) {
    iout[i] = (n + 3)/4 - i
    out[i] = f32(i*2) + f32(i*2)
  }
  for j in serial((n + 3)/4, (n + 3)/4) {
  }
)",
              R"(  let cse = (n + 3)/4
  for i in serial(0, cse) {
    iout[i] = (n + 3)/4 - i
    let cse_1 = f32(i*2)
    out[i] = cse_1 + cse_1
  }
  for j in serial(cse, cse) {
  }
)");
}

TEST(Cse, UnchangedKernelIsTheSameNode) {
  tir::Kernel k = tir::parse_kernel(testing::kernel_text("  iout[n] = n*2\n  out[0] = x[n]\n"));
  EXPECT_TRUE(eliminate_common_subexpressions(k).body.same_as(k.body));
  tir::Kernel gemm = tir::testing::gemm_kernel();
  tir::Kernel once = eliminate_common_subexpressions(gemm);
  EXPECT_EQ(tir::verify_errors(once), std::vector<std::string>{}) << tir::print(once);
  EXPECT_TRUE(eliminate_common_subexpressions(once).body.same_as(once.body)) << tir::print(once);
}

}  // namespace
}  // namespace tilefuse::passes
