// dce: text in -> eliminate_dead_code -> text out.
#include "passes/dce.h"

#include <gtest/gtest.h>

#include "../tir/test_kernels.h"
#include "pass_test_util.h"

namespace tilefuse::passes {
namespace {

using testing::expect_body;

auto dce = [](const tir::Kernel& k) { return eliminate_dead_code(k); };

TEST(Dce, UnusedLets) {
  expect_body(dce, "  let a = n*2\n  let b = a + 1\n  iout[0] = n\n", "  iout[0] = n\n");
  expect_body(dce, "  let a = n*2\n  let b = a + 1\n  iout[0] = b\n",
              "  let a = n*2\n  let b = a + 1\n  iout[0] = b\n");
}

TEST(Dce, WritesToUnreadLocalBuffers) {
  expect_body(dce, R"(  alloc t: local i32[4]
  alloc u: shared i32[4]
  t[0] = n
  u[0] = t[0]
  iout[0] = 1
)",
              "  iout[0] = 1\n");
  // Read afterwards: kept.
  const char* live = R"(  alloc t: local i32[4]
  t[0] = n
  iout[0] = t[0]
)";
  expect_body(dce, live, live);
}

TEST(Dce, GlobalStoresAlwaysStay) {
  const char* body = "  iout[0] = n\n  out[1] = 2.0\n";
  expect_body(dce, body, body);
}

TEST(Dce, DeadFragmentGemmFillAndCopy) {
  expect_body(dce, R"(  alloc a: shared f32[4, 4]
  alloc c: fragment f32[4, 4]
  copy (i: 4, j: 4) a[i, j] = x[i*4 + j]
  fill(c, 0.0)
  gemm(a, a, c)
  iout[0] = n
)",
              "  iout[0] = n\n");
}

TEST(Dce, ConstantIfsEmptyLoopsAndEvaluate) {
  expect_body(dce, R"(  if false {
    iout[0] = 1
  } else {
    iout[0] = 2
  }
  if true {
    iout[1] = 1
  }
  if n > 0 {
    evaluate(n)
  } else {
    iout[2] = 3
  }
  if n > 1 {
    iout[3] = 4
  } else {
    evaluate(n)
  }
  for i in serial(0, n) {
    evaluate(x[i])
  }
  for j in serial(0, 0) {
    iout[j] = 5
  }
  check(n > 0, code=1, msg="n")
  barrier()
)",
              R"(  iout[0] = 2
  iout[1] = 1
  if !(n > 0) {
    iout[2] = 3
  }
  if n > 1 {
    iout[3] = 4
  }
  check(n > 0, code=1, msg="n")
  barrier()
)");
}

TEST(Dce, UnchangedKernelIsTheSameNode) {
  for (const tir::Kernel& k : {tir::testing::gemm_kernel(), tir::testing::gather_kernel()}) {
    EXPECT_TRUE(eliminate_dead_code(k).body.same_as(k.body)) << tir::print(eliminate_dead_code(k));
  }
}

}  // namespace
}  // namespace tilefuse::passes
