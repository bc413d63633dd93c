// Matmul / addmm of the reference evaluator against naive loops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "reference/eval.h"
#include "reference/matmul.h"
#include "test_util.h"

namespace tilefuse {
namespace {

using testing_util::Lcg;
using testing_util::param;
using testing_util::random_tensor;
using testing_util::tensor_of;
using testing_util::values;

// Naive 2-D matmul accumulating in `Acc` in k order; returns the
// accumulators (before the final rounding) and sum |a||b| per element.
template <typename Acc>
void naive_mm(const Tensor& a, const Tensor& b, std::vector<double>* acc,
              std::vector<double>* mag) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const std::vector<double> av = values(a), bv = values(b);
  acc->assign(static_cast<size_t>(m * n), 0);
  mag->assign(static_cast<size_t>(m * n), 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      Acc s = 0;
      double g = 0;
      for (int64_t p = 0; p < k; ++p) {
        const Acc x = static_cast<Acc>(av[i * k + p]), y = static_cast<Acc>(bv[p * n + j]);
        s += x * y;
        g += std::abs(static_cast<double>(x) * static_cast<double>(y));
      }
      (*acc)[i * n + j] = static_cast<double>(s);
      (*mag)[i * n + j] = g;
    }
}

// The result must be the f32 (f64) accumulation rounded once: within a few
// accumulator ulps of the naive sum before the final rounding.
void expect_matmul_matches(const Tensor& out, const Tensor& a, const Tensor& b, DType dt) {
  std::vector<double> acc, mag;
  double eps;
  if (dt == DType::F64) {
    naive_mm<double>(a, b, &acc, &mag);
    eps = std::numeric_limits<double>::epsilon();
  } else {
    naive_mm<float>(a, b, &acc, &mag);
    eps = std::numeric_limits<float>::epsilon();
  }
  for (size_t i = 0; i < acc.size(); ++i) {
    const double got = out.get_linear(static_cast<int64_t>(i));
    // Final rounding to dt: the result is one of the two dt values around
    // acc +- the accumulation tolerance.
    const double tol = 4 * eps * mag[i];
    const double lo = round_to(dt, acc[i] - tol), hi = round_to(dt, acc[i] + tol);
    ASSERT_TRUE(got >= std::min(lo, hi) && got <= std::max(lo, hi))
        << "element " << i << ": got " << got << ", naive " << acc[i];
  }
}

// C (m x n of row stride ldc, initially `cv`) after each element's
// sequential k-order sum continues over a(i, p) * b(p, j): products and
// sums rounded to f32 (f64 when `f64`), no FMA; what gemm_accumulate must
// produce bit for bit. The columns past n keep cv's values (rounded to f32
// unless f64).
template <class A, class B>
std::vector<double> naive_continued_sum(const std::vector<double>& cv, int64_t m, int64_t n,
                                        int64_t k, int64_t ldc, bool f64, A a, B b) {
  std::vector<double> want = cv;
  if (!f64)
    for (double& w : want) w = static_cast<double>(static_cast<float>(w));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float sf = static_cast<float>(cv[i * ldc + j]);
      double sd = cv[i * ldc + j];
      for (int64_t p = 0; p < k; ++p) {
        const double x = a(i, p), y = b(p, j);
        const float prod = static_cast<float>(x) * static_cast<float>(y);
        sf += prod;
        sd += x * y;
      }
      want[i * ldc + j] = f64 ? sd : static_cast<double>(sf);
    }
  return want;
}

TEST(EvalMatmul, OddSizes2D) {
  const int64_t sizes[] = {1, 7, 33, 130};
  for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    for (int64_t m : sizes)
      for (int64_t k : sizes)
        for (int64_t n : sizes) {
          if ((m + k + n) % 3 != 0 && !(m == 130 && k == 130 && n == 130)) continue;
          SCOPED_TRACE(std::string(dtype_name(dt)) + " " + std::to_string(m) + "x" +
                       std::to_string(k) + "x" + std::to_string(n));
          Graph g;
          const ValueId a = param(g, "a", dt, {m, k});
          const ValueId b = param(g, "b", dt, {k, n});
          g.add_output(g.matmul(a, b, {}));
          Lcg rng(static_cast<uint64_t>(m * 10000 + k * 100 + n));
          const Tensor ta = random_tensor(dt, {m, k}, rng), tb = random_tensor(dt, {k, n}, rng);
          const Tensor out = evaluate(g, {ta, tb}).at(0);
          ASSERT_EQ(out.dtype(), dt);
          ASSERT_EQ(out.shape(), (Shape{m, n}));
          expect_matmul_matches(out, ta, tb, dt);
        }
  }
}

TEST(EvalMatmul, BlockedPathIsBitIdenticalToTheNaiveF32Loop) {
  // matmul.h's contract: one sequential f32 sum per element, no FMA, in both
  // the AVX2 and the generic microkernel. Sizes cross every block boundary.
  Graph g;
  const ValueId a = param(g, "a", DType::F32, {197, 301});
  const ValueId b = param(g, "b", DType::F32, {301, 530});
  g.add_output(g.matmul(a, b, {}));
  Lcg rng(99);
  const Tensor ta = random_tensor(DType::F32, {197, 301}, rng);
  const Tensor tb = random_tensor(DType::F32, {301, 530}, rng);
  const Tensor out = evaluate(g, {ta, tb}).at(0);
  std::vector<double> acc, mag;
  naive_mm<float>(ta, tb, &acc, &mag);
  EXPECT_EQ(values(out), acc);
}

TEST(EvalMatmul, F16AccumulatesInF32) {
  // 4096 products of 1*1: an f16 accumulator sticks at 2048 (2048 + 1 rounds
  // back to 2048); f32 reaches 4096, which f16 represents exactly.
  Graph g;
  const ValueId a = param(g, "a", DType::F16, {1, 4096});
  const ValueId b = param(g, "b", DType::F16, {4096, 1});
  g.add_output(g.matmul(a, b, {}));
  const Tensor out = evaluate(g, {Tensor::full(DType::F16, {1, 4096}, 1.0),
                                  Tensor::full(DType::F16, {4096, 1}, 1.0)})
                         .at(0);
  EXPECT_EQ(out.get_linear(0), 4096);
  // A case where rounding each partial sum to f16 loses the small terms:
  // 1 + 1024 * 2^-11 = 1.5 in f32, but 1 in an f16 accumulator.
  Graph g2;
  const ValueId c = param(g2, "c", DType::F16, {1025});
  const ValueId d = param(g2, "d", DType::F16, {1025});
  g2.add_output(g2.matmul(c, d, {}));
  std::vector<double> cv(1025, std::ldexp(1.0, -11));
  cv[0] = 1;
  const Tensor dot =
      evaluate(g2, {tensor_of(DType::F16, {1025}, cv), Tensor::full(DType::F16, {1025}, 1.0)})
          .at(0);
  EXPECT_EQ(dot.shape(), Shape{});
  EXPECT_EQ(dot.get_linear(0), 1.5);
}

TEST(EvalMatmul, OneDimensionalOperands) {
  struct Case {
    Shape a, b, out;
  };
  const Case cases[] = {
      {{33}, {33, 7}, {7}},       {{7, 33}, {33}, {7}},       {{33}, {33}, {}},
      {{3, 7, 33}, {33}, {3, 7}}, {{33}, {2, 33, 5}, {2, 5}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_to_string(c.a) + " @ " + shape_to_string(c.b));
    Graph g;
    const ValueId a = param(g, "a", DType::F32, c.a);
    const ValueId b = param(g, "b", DType::F32, c.b);
    g.add_output(g.matmul(a, b, {}));
    Lcg rng(7);
    const Tensor ta = random_tensor(DType::F32, c.a, rng), tb = random_tensor(DType::F32, c.b, rng);
    const Tensor out = evaluate(g, {ta, tb}).at(0);
    ASSERT_EQ(out.shape(), c.out);
    // Naive: every output element is a dot over k = 33.
    for (int64_t i = 0; i < out.numel(); ++i) {
      const std::vector<int64_t> pos = testing_util::unravel(i, c.out);
      float s = 0;
      for (int64_t p = 0; p < 33; ++p) {
        std::vector<int64_t> ia, ib;
        if (c.a.size() == 1) {
          ia = {p};
          if (c.b.size() == 2)
            ib = {p, pos[0]};
          else if (c.b.size() == 1)
            ib = {p};
          else
            ib = {pos[0], p, pos[1]};
        } else {
          ib = {p};
          ia = pos;
          ia.push_back(p);
        }
        s += static_cast<float>(ta.get(ia)) * static_cast<float>(tb.get(ib));
      }
      EXPECT_EQ(out.get_linear(i), s);
    }
  }
}

TEST(EvalMatmul, BatchedBroadcast) {
  Graph g;
  const ValueId a = param(g, "a", DType::F16, {2, 1, 5, 7});
  const ValueId b = param(g, "b", DType::F16, {3, 7, 4});
  g.add_output(g.matmul(a, b, {}));
  Lcg rng(4);
  const Tensor ta = random_tensor(DType::F16, {2, 1, 5, 7}, rng);
  const Tensor tb = random_tensor(DType::F16, {3, 7, 4}, rng);
  const Tensor out = evaluate(g, {ta, tb}).at(0);
  ASSERT_EQ(out.shape(), (Shape{2, 3, 5, 4}));
  for (int64_t i = 0; i < out.numel(); ++i) {
    const std::vector<int64_t> p = testing_util::unravel(i, out.shape());
    float s = 0;
    for (int64_t k = 0; k < 7; ++k) {
      const std::vector<int64_t> ia{p[0], 0, p[2], k}, ib{p[1], k, p[3]};
      s += static_cast<float>(ta.get(ia)) * static_cast<float>(tb.get(ib));
    }
    EXPECT_EQ(out.get_linear(i), round_to(DType::F16, s));
  }
}

TEST(EvalMatmul, StridedViewOperandsOnTheBlockedPath) {
  // w.T and a sliced x with step 2, large enough for the packed kernel.
  Graph g;
  const ValueId x = param(g, "x", DType::F16, {260, 300});
  const ValueId w = param(g, "w", DType::F16, {170, 150});
  const ValueId xs = g.slice(x, 1, std::nullopt, std::nullopt, 2, {});  // [260, 150]
  g.add_output(g.matmul(xs, g.transpose(w, 0, 1, {}), {}));             // [260, 170]
  Lcg rng(6);
  const Tensor tx = random_tensor(DType::F16, {260, 300}, rng);
  const Tensor tw = random_tensor(DType::F16, {170, 150}, rng);
  const Tensor out = evaluate(g, {tx, tw}).at(0);
  ASSERT_EQ(out.shape(), (Shape{260, 170}));
  const Tensor a = tx.slice(1, 0, 300, 2).contiguous(true);
  const Tensor b = tw.permute({1, 0}).contiguous(true);
  expect_matmul_matches(out, a, b, DType::F16);
}

TEST(EvalAddmm, BetaAlphaAndBiasShapes) {
  const Shape bias_shapes[] = {{40}, {33, 40}, {1, 40}, {33, 1}, {}};
  for (DType dt : {DType::F32, DType::F16}) {
    for (const Shape& bs : bias_shapes) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " bias " + shape_to_string(bs));
      Graph g;
      const ValueId bias = param(g, "bias", dt, bs);
      const ValueId a = param(g, "a", dt, {33, 70});
      const ValueId b = param(g, "b", dt, {70, 40});
      g.add_output(g.addmm(bias, a, b, 0.5, 1.5, {}));
      Lcg rng(12);
      const Tensor tbias = random_tensor(dt, bs, rng);
      const Tensor ta = random_tensor(dt, {33, 70}, rng), tb = random_tensor(dt, {70, 40}, rng);
      const Tensor out = evaluate(g, {tbias, ta, tb}).at(0);
      ASSERT_EQ(out.shape(), (Shape{33, 40}));
      std::vector<double> acc, mag;
      naive_mm<float>(ta, tb, &acc, &mag);
      for (int64_t i = 0; i < 33; ++i)
        for (int64_t j = 0; j < 40; ++j) {
          const float bv = static_cast<float>(testing_util::broadcast_get(tbias, {i, j}));
          const float want = 1.5f * static_cast<float>(acc[i * 40 + j]) + 0.5f * bv;
          const std::vector<int64_t> o{i, j};
          EXPECT_EQ(out.get(o), round_to(dt, want));
        }
    }
  }
}

TEST(EvalAddmm, BetaZeroIgnoresNanBias) {
  Graph g;
  const ValueId bias = param(g, "bias", DType::F32, {2});
  const ValueId a = param(g, "a", DType::F32, {1, 1});
  const ValueId b = param(g, "b", DType::F32, {1, 2});
  g.add_output(g.addmm(bias, a, b, 0.0, 2.0, {}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor out =
      evaluate(g, {tensor_of(DType::F32, {2}, {nan, 1}), tensor_of(DType::F32, {1, 1}, {3}),
                   tensor_of(DType::F32, {1, 2}, {1, 2})})
          .at(0);
  EXPECT_EQ(values(out), (std::vector<double>{6, 12}));
}

TEST(EvalMatmul, EmptyDims) {
  Graph g;
  const ValueId a = param(g, "a", DType::F16, {3, 0});
  const ValueId b = param(g, "b", DType::F16, {0, 4});
  const ValueId bias = param(g, "bias", DType::F16, {4});
  const ValueId m0 = param(g, "m0", DType::F16, {0, 5});
  const ValueId w = param(g, "w", DType::F16, {5, 3});
  g.add_output(g.matmul(a, b, {}));
  g.add_output(g.addmm(bias, a, b, 2.0, 1.0, {}));
  g.add_output(g.matmul(m0, w, {}));
  Lcg rng(3);
  const Tensor tbias = tensor_of(DType::F16, {4}, {1, 2, 3, -4});
  const std::vector<Tensor> out =
      evaluate(g, {Tensor::empty(DType::F16, {3, 0}), Tensor::empty(DType::F16, {0, 4}), tbias,
                   Tensor::empty(DType::F16, {0, 5}), random_tensor(DType::F16, {5, 3}, rng)});
  ASSERT_EQ(out[0].shape(), (Shape{3, 4}));
  EXPECT_EQ(values(out[0]), std::vector<double>(12, 0.0));
  ASSERT_EQ(out[1].shape(), (Shape{3, 4}));
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(out[1].get_linear(i), 2 * tbias.get_linear(i % 4));
  EXPECT_EQ(out[2].shape(), (Shape{0, 3}));
}

TEST(EvalMatmul, OracleIsF64AndCloseToEager) {
  Graph g;
  const ValueId a = param(g, "a", DType::F16, {130, 257});
  const ValueId b = param(g, "b", DType::F16, {257, 33});
  g.add_output(g.matmul(a, b, {}));
  Lcg rng(9);
  const std::vector<Tensor> params = {random_tensor(DType::F16, {130, 257}, rng),
                                      random_tensor(DType::F16, {257, 33}, rng)};
  const Tensor eager = evaluate(g, params).at(0);
  const Tensor oracle = evaluate(g, params, {EvalMode::kOracle}).at(0);
  ASSERT_EQ(oracle.dtype(), DType::F64);
  std::vector<double> acc, mag;
  naive_mm<double>(params[0], params[1], &acc, &mag);
  EXPECT_EQ(values(oracle), acc);  // f16 products are exact in f64; same summation order
  const double err = relative_error(eager, oracle);
  EXPECT_GT(err, 0);
  EXPECT_LT(err, 1e-3);
}

}  // namespace
}  // namespace tilefuse

namespace tilefuse::reference {
namespace {

// Every microkernel build this CPU supports gives the same bits as the naive
// sequential loop, for f32 and f64 accumulation, with a bias epilogue.
// 2 * (a @ b) + 0.5 * bias[j], each sum sequential in k order: in f64, or
// (f64 false) in f32 with f32 rounding at every step, no FMA (what gemm()
// must give bit for bit with alpha 2 and beta 0.5).
std::vector<double> naive_addmm(const Tensor& a, const Tensor& b, const Tensor& bias, bool f64) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const std::vector<double> av = testing_util::values(a), bv = testing_util::values(b);
  std::vector<double> want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float sf = 0;
      double sd = 0;
      for (int64_t p = 0; p < k; ++p) {
        sf += static_cast<float>(av[i * k + p]) * static_cast<float>(bv[p * n + j]);
        sd += av[i * k + p] * bv[p * n + j];
      }
      const double bj = bias.get_linear(j);
      want[i * n + j] = f64 ? 2.0 * sd + 0.5 * bj
                            : static_cast<double>(2.0f * sf + 0.5f * static_cast<float>(bj));
    }
  return want;
}

// gemm() of one item, C (c_dtype, poisoned with NaN first) = 2 * (a @ b) +
// 0.5 * bias[j], accumulated in f64 when c_dtype is, else in f32; C's values.
std::vector<double> run_addmm(const Tensor& a, const Tensor& b, const Tensor& bias, DType c_dtype,
                              GemmKernel kernel,
                              int64_t pack_budget_bytes = GemmOptions{}.pack_budget_bytes) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  Tensor c = Tensor::full(c_dtype, {m, n}, std::nan(""));
  GemmItem item;
  item.a = {a.data_ptr(), a.dtype(), m, k, a.strides()[0], a.strides()[1]};
  item.b = {b.data_ptr(), b.dtype(), k, n, b.strides()[0], b.strides()[1]};
  item.c = c.data_ptr();
  item.bias = MatrixRef{bias.data_ptr(), bias.dtype(), m, n, 0, 1};
  GemmOptions options;
  options.accumulator = c_dtype == DType::F64 ? GemmAccumulator::kF64 : GemmAccumulator::kF32;
  options.c_dtype = c_dtype;
  options.alpha = 2;
  options.beta = 0.5;
  options.kernel = kernel;
  options.pack_budget_bytes = pack_budget_bytes;
  ThreadPool pool(2);
  gemm({item}, options, pool);
  return testing_util::values(c);
}

TEST(Gemm, EveryMicrokernelIsBitIdentical) {
  constexpr int64_t m = 131, k = 300, n = 530;
  testing_util::Lcg rng(31);
  for (DType dt : {DType::F16, DType::F64}) {
    const Tensor a = testing_util::random_tensor(dt, {m, k}, rng);
    const Tensor b = testing_util::random_tensor(dt, {n, k}, rng).permute({1, 0});  // strided
    const Tensor bias = testing_util::random_tensor(dt, {n}, rng);
    const bool f64 = dt == DType::F64;
    const std::vector<double> want = naive_addmm(a, b, bias, f64);
    for (GemmKernel kernel : {GemmKernel::kGeneric, GemmKernel::kAvx2, GemmKernel::kAvx512}) {
      if (!gemm_kernel_supported(kernel)) continue;
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + gemm_kernel_name(kernel));
      EXPECT_EQ(run_addmm(a, b, bias, f64 ? DType::F64 : DType::F32, kernel), want);
    }
  }
}

// An item whose M or N is small against K packs K in chunks once its panels
// pass GemmOptions::pack_budget_bytes (a 1 x 2^24 x 1 product packed 3 GB
// at once). The sums keep their k order across chunks: the bits are the
// naive loop's with chunking forced by a tiny budget (chunks of 256, the last
// ragged), on every microkernel, for a dot product, a thin M over two N
// blocks (512 columns each) and a thin N, with a bias.
TEST(Gemm, KInChunksIsBitIdenticalToTheNaiveLoop) {
  const int64_t shapes[][3] = {{1, 1, 70000}, {3, 700, 1000}, {130, 2, 1000}};
  testing_util::Lcg rng(41);
  for (DType dt : {DType::F32, DType::F64}) {
    for (const auto& shape : shapes) {
      const int64_t m = shape[0], n = shape[1], k = shape[2];
      const Tensor a = testing_util::random_tensor(dt, {m, k}, rng);
      const Tensor b = testing_util::random_tensor(dt, {k, n}, rng);
      const Tensor bias = testing_util::random_tensor(dt, {n}, rng);
      const bool f64 = dt == DType::F64;
      const std::vector<double> want = naive_addmm(a, b, bias, f64);
      for (int64_t budget : {int64_t{1}, int64_t{64} << 20}) {
        for (GemmKernel kernel : {GemmKernel::kGeneric, GemmKernel::kAvx2, GemmKernel::kAvx512}) {
          if (!gemm_kernel_supported(kernel)) continue;
          SCOPED_TRACE(std::string(dtype_name(dt)) + " " + std::to_string(m) + "x" +
                       std::to_string(n) + " budget " + std::to_string(budget) + " " +
                       gemm_kernel_name(kernel));
          EXPECT_EQ(run_addmm(a, b, bias, dt, kernel, budget), want);
        }
      }
    }
  }
}

// gemm_accumulate (the CPU executor's GEMM) continues each C element's
// sequential k-order sum bit for bit, with K past one K block (256) and M past
// one row block (96), ragged right and bottom panels, and a C that already
// holds partial sums, on every microkernel build this CPU supports.
TEST(Gemm, AccumulateContinuesTheNaiveSumAcrossBlocks) {
  constexpr int64_t m = 205, k = 600, n = 77, ldc = 80;
  testing_util::Lcg rng(7);
  for (DType dt : {DType::F16, DType::F32, DType::F64}) {
    const Tensor a = testing_util::random_tensor(dt, {m, k}, rng);
    const Tensor b = testing_util::random_tensor(dt, {k, n}, rng);
    const Tensor c0 = testing_util::random_tensor(DType::F64, {m, ldc}, rng);
    const bool f64 = dt == DType::F64;
    const std::vector<double> av = testing_util::values(a), bv = testing_util::values(b),
                              cv = testing_util::values(c0);
    // (the columns past n are left alone)
    const std::vector<double> want = naive_continued_sum(
        cv, m, n, k, ldc, f64, [&](int64_t i, int64_t p) { return av[i * k + p]; },
        [&](int64_t p, int64_t j) { return bv[p * n + j]; });
    for (GemmKernel kernel : {GemmKernel::kGeneric, GemmKernel::kAvx2, GemmKernel::kAvx512}) {
      if (!gemm_kernel_supported(kernel)) continue;
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + gemm_kernel_name(kernel));
      const MatrixRef ar{a.data_ptr(), dt, m, k, a.strides()[0], a.strides()[1]};
      const MatrixRef br{b.data_ptr(), dt, k, n, b.strides()[0], b.strides()[1]};
      std::vector<double> got(cv.size());
      if (f64) {
        std::vector<double> c = cv;
        gemm_accumulate(ar, br, c.data(), ldc, kernel);
        got = c;
      } else {
        std::vector<float> c(cv.begin(), cv.end());
        gemm_accumulate(ar, br, c.data(), ldc, kernel);
        got.assign(c.begin(), c.end());
      }
      EXPECT_EQ(got, want);
    }
  }
}

// Operands given row by row (the CPU executor's gemm_pack tiles: rows
// gathered from a source, a masked-off row, K and N tails as shorter valid
// prefixes) give the same bits as the staged tiles holding those rows
// (zeros where not valid), on every microkernel build this CPU supports.
TEST(Gemm, AccumulateFromRowsEqualsTheStagedTiles) {
  constexpr int64_t m = 110, k = 300, n = 70, src_rows = 90, ldc = n;
  testing_util::Lcg rng(11);
  for (DType dt : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    const Tensor x = testing_util::random_tensor(dt, {src_rows, k + 5}, rng);
    const Tensor y = testing_util::random_tensor(dt, {k, n + 3}, rng);
    const int64_t es = dtype_size(dt);
    // A: row i is source row (i * 37) % src_rows, every 9th masked off,
    // every 7th cut to a K tail; B: row p is y's row p, every 5th cut to an
    // N tail, every 13th masked off.
    std::vector<const std::byte*> a_rows(m), b_rows(k);
    std::vector<int64_t> a_valid(m), b_valid(k);
    Tensor a_tile = Tensor::full(dt, {m, k}, 0), b_tile = Tensor::full(dt, {k, n}, 0);
    for (int64_t i = 0; i < m; ++i) {
      const int64_t r = (i * 37) % src_rows;
      a_rows[i] = x.data_ptr() + r * x.strides()[0] * es;
      a_valid[i] = i % 9 == 0 ? 0 : i % 7 == 0 ? k - 1 - i : k;
      std::memcpy(a_tile.data_ptr() + i * k * es, a_rows[i], static_cast<size_t>(a_valid[i] * es));
    }
    for (int64_t p = 0; p < k; ++p) {
      b_rows[p] = y.data_ptr() + p * y.strides()[0] * es;
      b_valid[p] = p % 13 == 0 ? 0 : p % 5 == 0 ? n - 1 - p % 40 : n;
      std::memcpy(b_tile.data_ptr() + p * n * es, b_rows[p], static_cast<size_t>(b_valid[p] * es));
    }
    const RowsRef ra{a_rows.data(), a_valid.data(), dt, m, k};
    const RowsRef rb{b_rows.data(), b_valid.data(), dt, k, n};
    const MatrixRef sa{a_tile.data_ptr(), dt, m, k, k, 1};
    const MatrixRef sb{b_tile.data_ptr(), dt, k, n, n, 1};
    const Tensor c0 = testing_util::random_tensor(DType::F64, {m, ldc}, rng);
    const std::vector<double> cv = testing_util::values(c0);
    for (GemmKernel kernel : {GemmKernel::kGeneric, GemmKernel::kAvx2, GemmKernel::kAvx512}) {
      if (!gemm_kernel_supported(kernel)) continue;
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + gemm_kernel_name(kernel));
      if (dt == DType::F64) {
        std::vector<double> staged = cv, rows = cv, mixed = cv;
        gemm_accumulate(sa, sb, staged.data(), ldc, kernel);
        gemm_accumulate(GemmOperand(&ra), GemmOperand(&rb), rows.data(), ldc, kernel);
        gemm_accumulate(GemmOperand(&ra), sb, mixed.data(), ldc, kernel);
        EXPECT_EQ(rows, staged);
        EXPECT_EQ(mixed, staged);
        EXPECT_NE(staged, cv);
      } else {
        std::vector<float> staged(cv.begin(), cv.end()), rows = staged, mixed = staged;
        gemm_accumulate(sa, sb, staged.data(), ldc, kernel);
        gemm_accumulate(GemmOperand(&ra), GemmOperand(&rb), rows.data(), ldc, kernel);
        gemm_accumulate(sa, GemmOperand(&rb), mixed.data(), ldc, kernel);
        EXPECT_EQ(rows, staged);
        EXPECT_EQ(mixed, staged);
      }
    }
  }
}

// Tiles of at most 1024 multiply-adds (the CPU executor's tiles of a batched
// GEMM of tiny matrices) run as a plain loop instead of the packed
// microkernels: the same bits as the naive k-order sum continued from C,
// with operands strided (a transposed B), given by rows (a masked-off row, K
// and N tails read as zeros) or mixed, on either side of the threshold.
TEST(Gemm, AccumulateSmallTilesContinueTheNaiveSum) {
  struct Shape {
    int64_t m, k, n;
  };
  const Shape shapes[] = {{1, 1, 1}, {4, 4, 4}, {3, 5, 7}, {8, 16, 8}, {1, 16, 64}, {8, 16, 9}};
  testing_util::Lcg rng(23);
  for (DType dt : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    for (const Shape& s : shapes) {
      const int64_t m = s.m, k = s.k, n = s.n, ldc = n + 3;
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + std::to_string(m) + "x" + std::to_string(k) +
                   "x" + std::to_string(n));
      const Tensor a = testing_util::random_tensor(dt, {m, k}, rng);
      const Tensor bt = testing_util::random_tensor(dt, {n, k}, rng);  // B transposed
      const Tensor c0 = testing_util::random_tensor(DType::F64, {m, ldc}, rng);
      const int64_t es = dtype_size(dt);
      // Rows: A's row 1 masked off and its last row cut to a K tail; B's
      // rows (B = bt^T, copied) with every third cut to an N tail.
      const std::vector<double> av0 = testing_util::values(a), btv = testing_util::values(bt),
                                cv = testing_util::values(c0);
      Tensor b = Tensor::full(dt, {k, n}, 0);
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j) b.set_linear(p * n + j, btv[j * k + p]);
      std::vector<const std::byte*> a_rows(m), b_rows(k);
      std::vector<int64_t> a_valid(m), b_valid(k);
      for (int64_t i = 0; i < m; ++i) {
        a_rows[i] = a.data_ptr() + i * k * es;
        a_valid[i] = m > 1 && i == 1 ? 0 : m > 2 && i == m - 1 ? k / 2 : k;
      }
      for (int64_t p = 0; p < k; ++p) {
        b_rows[p] = b.data_ptr() + p * n * es;
        b_valid[p] = p % 3 == 2 ? n / 2 : n;
      }
      const RowsRef ra{a_rows.data(), a_valid.data(), dt, m, k};
      const RowsRef rb{b_rows.data(), b_valid.data(), dt, k, n};
      const MatrixRef sa{a.data_ptr(), dt, m, k, k, 1};
      const MatrixRef sb{bt.data_ptr(), dt, k, n, 1, k};  // transposed view of bt
      // want(rows): the naive sum over the rows' values (zeros past valid).
      const auto naive = [&](bool rows_a, bool rows_b) {
        return naive_continued_sum(
            cv, m, n, k, ldc, dt == DType::F64,
            [&](int64_t i, int64_t p) { return rows_a && p >= a_valid[i] ? 0.0 : av0[i * k + p]; },
            [&](int64_t p, int64_t j) { return rows_b && j >= b_valid[p] ? 0.0 : btv[j * k + p]; });
      };
      const auto run = [&](const GemmOperand& A, const GemmOperand& B) {
        if (dt == DType::F64) {
          std::vector<double> c = cv;
          gemm_accumulate(A, B, c.data(), ldc);
          return c;
        }
        std::vector<float> c(cv.begin(), cv.end());
        gemm_accumulate(A, B, c.data(), ldc);
        return std::vector<double>(c.begin(), c.end());
      };
      EXPECT_EQ(run(sa, sb), naive(false, false));
      EXPECT_EQ(run(GemmOperand(&ra), GemmOperand(&rb)), naive(true, true));
      EXPECT_EQ(run(GemmOperand(&ra), sb), naive(true, false));
      EXPECT_EQ(run(sa, GemmOperand(&rb)), naive(false, true));
      std::vector<double> start = cv;  // C as the accumulator holds it
      if (dt != DType::F64)
        for (double& v : start) v = static_cast<double>(static_cast<float>(v));
      EXPECT_NE(run(sa, sb), start);
    }
  }
}

}  // namespace
}  // namespace tilefuse::reference
