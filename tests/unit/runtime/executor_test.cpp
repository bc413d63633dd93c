// CPU executor: pointwise, gather, GEMM and binding tests against direct C++
// computations on random inputs, outputs NaN-poisoned before each run.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "exec_test_util.h"
#include "runtime/cpu/executor.h"
#include "tir/parser.h"

namespace tilefuse::runtime::testing {
namespace {

using tir::ForKind;

// out[i] = x[i] * 2 + y[i] * s (f32) in blocks of 128 with a tail mask.
Kernel pointwise_kernel() {
  KernelBuilder b("pointwise");
  Var n = b.scalar_param("n");
  Var s = b.scalar_param("s", DType::F32);
  Buffer x = b.input("x", DType::F32, {n});
  Buffer y = b.input("y", DType::F32, {n});
  Buffer out = b.output("out", DType::F32, {n});
  Var pid = b.program_id("pid", (n + 127) / 128);
  b.parallel("i", 128, [&](Var i) {
    Var idx = b.let("idx", pid * 128 + i);
    Expr ok = idx < n;
    b.store(out, {idx}, tir::load(x, {idx}, ok) * 2.0f + tir::load(y, {idx}, ok) * s, ok);
  });
  return b.build();
}

TEST(CpuExecutor, PointwiseWithTailMask) {
  Kernel k = pointwise_kernel();
  tir::verify(k);
  for (int64_t n : {0, 1, 127, 128, 1000}) {
    Tensor x = random_tensor(DType::F32, {n}, 1), y = random_tensor(DType::F32, {n}, 2);
    Tensor out = poisoned(DType::F32, {n});
    execute(k, {{"n", n}, {"s", 0.75}, {"x", x}, {"y", y}, {"out", out}}, {.num_threads = 2});
    for (int64_t i = 0; i < n; ++i) {
      const float want =
          static_cast<float>(x.get_linear(i)) * 2.0f + static_cast<float>(y.get_linear(i)) * 0.75f;
      ASSERT_EQ(out.get_linear(i), want) << "n=" << n << " i=" << i;
    }
  }
}

// Strided 2-D views and an if/else inside a parallel nest (batched masks).
TEST(CpuExecutor, ParsedKernelWithBranchesAndStrides) {
  Kernel k = tir::parse_kernel(R"(kernel branches(
  R: i32,
  C: i32,
  x: global readonly f64[R, C] strides [1, R],
  out: global f64[R, C],
) grid(p: 1) {
  for i in parallel(0, R) {
    for j in parallel(0, C) {
      let v = x[i, j]
      if v > 0.0_f64 {
        out[i, j] = v*2.0_f64
      } else {
        out[i, j] = select(j % 2 == 0, 0.0_f64 - v, v + 1.0_f64)
      }
    }
  }
}
)");
  tir::verify(k);
  const int64_t R = 37, C = 29;
  // x is the transpose of a contiguous [C, R] tensor: strides [1, R].
  Tensor base = random_tensor(DType::F64, {C, R}, 3);
  Tensor x = base.permute({1, 0});
  Tensor out = poisoned(DType::F64, {R, C});
  execute(k, {{"R", R}, {"C", C}, {"x", x}, {"out", out}});
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) {
      const int64_t ij[] = {i, j};
      const double v = x.get(ij);
      const double want = v > 0 ? v * 2 : (j % 2 == 0 ? 0.0 - v : v + 1.0);
      ASSERT_EQ(out.get(ij), want) << i << "," << j;
    }
}

class GatherTest : public ::testing::TestWithParam<bool> {};

TEST_P(GatherTest, WrapsAndFailsChecks) {
  Kernel k = gemm_kernel(DType::F32, 16, 16, 8, /*gather=*/true, /*hoisted=*/GetParam());
  const int64_t M = 40, N = 20, K = 13, R = 25;
  Tensor A = random_tensor(DType::F32, {R, K}, 4);  // storage holds exactly R*K elements
  Tensor B = random_tensor(DType::F32, {K, N}, 5);
  Tensor index = Tensor::empty(DType::I64, {M});
  std::mt19937 rng(6);
  for (int64_t m = 0; m < M; ++m)
    index.set_linear(m, static_cast<double>(static_cast<int64_t>(rng() % (2 * R)) - R));
  Tensor C = poisoned(DType::F32, {M, N});
  std::vector<KernelArg> args = {{"M", M}, {"N", N}, {"K", K},         {"R", R},
                                 {"A", A}, {"B", B}, {"index", index}, {"C", C}};
  execute(k, args);
  std::vector<float> want = naive_gemm(A, B, &index, M);
  for (int64_t i = 0; i < M * N; ++i) ASSERT_EQ(C.get_linear(i), want[i]) << i;

  // An index past the end: a UserError with the tensor position and value,
  // and no out-of-bounds read (that would be an InternalError).
  index.set_linear(7, static_cast<double>(R + 5));
  try {
    execute(k, args, {.num_threads = 3});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "index 30 out of range [-25, 25) at position 7");
  }
  index.set_linear(7, static_cast<double>(-R - 1));
  EXPECT_THROW(execute(k, args), UserError);
}

INSTANTIATE_TEST_SUITE_P(RowsHoisted, GatherTest, ::testing::Bool());

class GemmTest : public ::testing::TestWithParam<DType> {};

TEST_P(GemmTest, MatchesNaiveLoop) {
  const DType dt = GetParam();
  Kernel k = gemm_kernel(dt, 32, 32, 16, /*gather=*/false);
  struct Size {
    int64_t m, n, k;
  };
  for (Size s : {Size{0, 5, 7}, Size{5, 0, 7}, Size{6, 5, 0}, Size{1, 1, 1}, Size{1, 33, 17},
                 Size{45, 70, 33}, Size{64, 64, 64}, Size{100, 37, 50}}) {
    Tensor A = random_tensor(dt, {s.m, s.k}, 7), B = random_tensor(dt, {s.k, s.n}, 8);
    Tensor C = poisoned(DType::F32, {s.m, s.n});
    execute(k, {{"M", s.m}, {"N", s.n}, {"K", s.k}, {"R", s.m}, {"A", A}, {"B", B}, {"C", C}});
    std::vector<float> want = naive_gemm(A, B, nullptr, s.m);
    for (int64_t i = 0; i < s.m * s.n; ++i)
      ASSERT_EQ(C.get_linear(i), want[i]) << s.m << "x" << s.n << "x" << s.k << " at " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GemmTest, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(CpuExecutor, ThreadCountDoesNotChangeBits) {
  Kernel k = gemm_kernel(DType::F32, 32, 32, 16, /*gather=*/true, /*hoisted=*/true);
  const int64_t M = 130, N = 70, K = 45, R = 60;
  Tensor A = random_tensor(DType::F32, {R, K}, 9), B = random_tensor(DType::F32, {K, N}, 10);
  Tensor index = Tensor::empty(DType::I64, {M});
  for (int64_t m = 0; m < M; ++m) index.set_linear(m, static_cast<double>((m * 7) % R - R / 2));
  Tensor C1 = poisoned(DType::F32, {M, N}), C4 = poisoned(DType::F32, {M, N});
  auto args = [&](const Tensor& C) {
    return std::vector<KernelArg>{{"M", M}, {"N", N}, {"K", K},         {"R", R},
                                  {"A", A}, {"B", B}, {"index", index}, {"C", C}};
  };
  execute(k, args(C1), {.num_threads = 1});
  execute(k, args(C4), {.num_threads = 4});
  for (int64_t i = 0; i < M * N; ++i) {
    ASSERT_FALSE(std::isnan(C1.get_linear(i)));
    ASSERT_EQ(bits_of(C1.get_linear(i)), bits_of(C4.get_linear(i))) << i;
  }
}

// Copies the batched fast paths do not cover: a transposing copy (the
// destination is not contiguous along the inner var), a converting copy and
// a masked one with `other`, all with ragged tails.
TEST(CpuExecutor, TransposingAndConvertingCopies) {
  KernelBuilder b("copies");
  Var R = b.scalar_param("R"), C = b.scalar_param("C");
  Buffer x = b.input("x", DType::F16, {R, C});
  Buffer out_t = b.output("out_t", DType::F16, {40, 24});
  Buffer out_f = b.output("out_f", DType::F32, {24, 40});
  b.program_id("p", 1);
  Buffer t = b.alloc("t", MemScope::Shared, DType::F16, {40, 24});
  b.copy(t, {24, 40}, [&](const std::vector<Var>& ij) {
    Expr ok = ij[0] < R && ij[1] < C;
    return tir::CopyBody{{ij[1], ij[0]}, tir::load(x, {ij[0], ij[1]}, ok)};
  });
  b.copy(out_t, [&](const std::vector<Var>& ij) { return tir::load(t, {ij[0], ij[1]}); });
  b.copy(out_f, [&](const std::vector<Var>& ij) {
    Expr ok = ij[0] < R && ij[1] < C;
    return tir::cast(DType::F32,
                     tir::load(x, {ij[0], ij[1]}, ok, tir::make_const(DType::F16, -1.5)));
  });
  Kernel k = b.build();
  tir::verify(k);
  const int64_t R_ = 17, C_ = 33;
  Tensor xt = random_tensor(DType::F16, {R_, C_}, 21);
  Tensor ot = poisoned(DType::F16, {40, 24}), of = poisoned(DType::F32, {24, 40});
  execute(k, {{"R", R_}, {"C", C_}, {"x", xt}, {"out_t", ot}, {"out_f", of}});
  for (int64_t i = 0; i < 24; ++i)
    for (int64_t j = 0; j < 40; ++j) {
      const bool ok = i < R_ && j < C_;
      const double v = ok ? xt.get_linear(i * C_ + j) : 0.0;
      ASSERT_EQ(ot.get_linear(j * 24 + i), v) << i << "," << j;
      ASSERT_EQ(of.get_linear(i * 40 + j), ok ? v : -1.5) << i << "," << j;
    }
}

TEST(CpuExecutor, BindingErrorsNameTheParameter) {
  Kernel k = pointwise_kernel();
  Tensor x = random_tensor(DType::F32, {10}, 1), out = poisoned(DType::F32, {10});
  auto message = [&](std::vector<KernelArg> args) -> std::string {
    try {
      execute(k, args);
    } catch (const UserError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(message({{"n", 10}, {"s", 1.0}, {"x", x}, {"y", x}}),
            "kernel `pointwise`: no argument for parameter `out`");
  EXPECT_EQ(message({{"n", 10}, {"s", 1.0}, {"x", x}, {"y", x}, {"out", out}, {"z", 1}}),
            "kernel `pointwise` has no parameter `z`");
  EXPECT_EQ(message({{"n", 11}, {"s", 1.0}, {"x", x}, {"y", x}, {"out", out}}),
            "argument `x`: shape [10], the kernel expects [11]");
  Tensor xi = Tensor::full(DType::I32, {10}, 1);
  EXPECT_EQ(message({{"n", 10}, {"s", 1.0}, {"x", xi}, {"y", x}, {"out", out}}),
            "argument `x`: dtype i32, the kernel expects f32");
  Tensor x2 = random_tensor(DType::F32, {10, 1}, 1);
  EXPECT_EQ(message({{"n", 10}, {"s", 1.0}, {"x", x2}, {"y", x}, {"out", out}}),
            "argument `x`: rank 2, the kernel expects 1");
  Tensor strided = random_tensor(DType::F32, {20}, 1).slice(0, 0, 20, 2);
  EXPECT_EQ(message({{"n", 10}, {"s", 1.0}, {"x", strided}, {"y", x}, {"out", out}}),
            "argument `x`: strides [2], the kernel expects [1]");
  EXPECT_EQ(message({{"n", 10}, {"s", x}, {"x", x}, {"y", x}, {"out", out}}),
            "argument `s`: expected a f32 scalar, got a tensor");
  EXPECT_EQ(message({{"n", int64_t{1} << 40}, {"s", 1.0}, {"x", x}, {"y", x}, {"out", out}}),
            "argument `n`: value 1099511627776 does not fit i32");
}

TEST(CpuExecutor, HooksMustBeInlinedFirst) {
  KernelBuilder b("hooked");
  Buffer out = b.output("out", DType::F32, {4});
  b.program_id("p", 1);
  b.parallel("i", 4, [&](Var i) { b.store(out, {i}, b.load_input("A", {i}, DType::F32)); });
  Kernel k = b.build();
  Tensor t = poisoned(DType::F32, {4});
  try {
    execute(k, {{"out", t}});
    FAIL();
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("run inline_hooks first"), std::string::npos);
  }
}

}  // namespace
}  // namespace tilefuse::runtime::testing
