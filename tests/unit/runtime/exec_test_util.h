// Helpers shared by the CPU executor tests: random inputs (never zeros),
// NaN-poisoned outputs, and the GEMM-shaped kernel the tests and the
// benchmark run.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "core/tensor.h"
#include "tir/builder.h"
#include "tir/verifier.h"

namespace tilefuse::runtime::testing {

using tir::Buffer;
using tir::Expr;
using tir::Kernel;
using tir::KernelBuilder;
using tir::MemScope;
using tir::Var;

// Uniform in [lo, hi), rounded to dtype, never exactly zero.
inline Tensor random_tensor(DType dt, const Shape& shape, uint64_t seed, double lo = -2,
                            double hi = 2) {
  Tensor t = Tensor::empty(dt, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = 0;
    while (round_to(dt, v) == 0) v = dist(rng);
    t.set_linear(i, v);
  }
  return t;
}

// A tensor whose every element is NaN (floats) or a marker (integers), so
// an element the kernel should write but does not shows up.
inline Tensor poisoned(DType dt, const Shape& shape) {
  return Tensor::full(dt, shape, is_floating(dt) ? NAN : -77);
}

// The bits of a float tensor (NaN-safe, sign-of-zero-safe comparison).
inline uint64_t bits_of(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}

// A GEMM kernel in the shape templates produce (after inline_hooks):
// C[M, N] (f32) = A[rows(M), K] @ B[K, N] in `dt`, BM x BN x BK tiles, K-tail
// masks, and when `gather`, A's rows gathered by index[M] (i64, negative
// values wrap once, out-of-range ones fail a check and are masked off).
// `hoisted` gives the form licm makes of it: the gathered rows computed once
// per program instance into a local buffer (-1: masked off) before the K
// loop, instead of in every copy.
inline Kernel gemm_kernel(DType dt, int BM, int BN, int BK, bool gather, bool hoisted = false) {
  KernelBuilder b("gemm");
  Var M = b.scalar_param("M"), N = b.scalar_param("N"), K = b.scalar_param("K");
  Var R = b.scalar_param("R", DType::I64);  // rows of A
  Buffer A = b.input("A", dt, {tir::cast(DType::I32, R), K}, {K, 1});
  Buffer index = gather ? b.input("index", DType::I64, {M}) : Buffer();
  Buffer B = b.input("B", dt, {K, N}, {N, 1});
  Buffer C = b.output("C", DType::F32, {M, N}, {N, 1});
  Var pid_m = b.program_id("pid_m", (M + (BM - 1)) / BM);
  Var pid_n = b.program_id("pid_n", (N + (BN - 1)) / BN);
  Buffer A_s = b.alloc("A_s", MemScope::Shared, dt, {BM, BK});
  Buffer B_s = b.alloc("B_s", MemScope::Shared, dt, {BK, BN});
  Buffer C_f = b.alloc("C_f", MemScope::Fragment, DType::F32, {BM, BN});
  Buffer rows = hoisted ? b.alloc("rows", MemScope::Local, DType::I64, {BM}) : Buffer();
  // The row of A for tile row i (at m), and whether it is valid.
  auto row_of = [&](const Expr& i, const Expr& m) -> std::pair<Expr, Expr> {
    if (!gather) return {tir::cast(DType::I64, m), m < M};
    if (hoisted) {
      Expr r = tir::load(rows, {i});
      return {r, r >= 0};
    }
    Expr raw = tir::load(index, {m}, m < M);
    Expr row = tir::select(raw < 0, raw + R, raw);
    return {row, m < M && row >= 0 && row < R};
  };
  if (gather) {
    b.parallel("i", BM, [&](Var i) {
      Var m = b.let("m", pid_m * BM + i);
      Var raw = b.let("raw", tir::load(index, {m}, m < M));
      Var row = b.let("row", tir::select(raw < 0, raw + R, raw));
      b.if_then(m < M, [&] {
        b.check(row >= 0 && row < R, 1, "index {} out of range [-{}, {}) at position {}",
                {raw, R, R, m});
      });
      if (hoisted)
        b.store(rows, {i},
                tir::select(m < M && row >= 0 && row < R, row, tir::make_int(DType::I64, -1)));
    });
  }
  b.fill(C_f, tir::make_const(DType::F32, 0));
  b.serial("k", (K + (BK - 1)) / BK, [&](Var k) {
    b.copy(A_s, [&](const std::vector<Var>& ij) {
      Expr m = pid_m * BM + ij[0], kk = k * BK + ij[1];
      auto [row, ok] = row_of(ij[0], m);
      return tir::load(A, {row, kk}, ok && kk < K);
    });
    b.copy(B_s, [&](const std::vector<Var>& ij) {
      Expr kk = k * BK + ij[0], n = pid_n * BN + ij[1];
      return tir::load(B, {kk, n}, kk < K && n < N);
    });
    b.gemm(A_s, B_s, C_f);
  });
  b.parallel("i", BM, [&](Var i) {
    b.parallel("j", BN, [&](Var j) {
      Var m = b.let("m", pid_m * BM + i);
      Var n = b.let("n", pid_n * BN + j);
      b.store(C, {m, n}, tir::load(C_f, {i, j}), m < M && n < N);
    });
  });
  Kernel kernel = b.build();
  tir::verify(kernel, "gemm_kernel", {.allow_hooks = false});
  return kernel;
}

// The naive product: each C element one k-order f32 sum (no FMA), rows of A
// gathered (with wrap) when index is given.
inline std::vector<float> naive_gemm(const Tensor& A, const Tensor& B, const Tensor* index,
                                     int64_t M) {
  const int64_t K = B.size(0), N = B.size(1), R = A.size(0);
  std::vector<float> c(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m) {
    int64_t row = m;
    if (index) {
      const int64_t i = m;
      row = static_cast<int64_t>(index->get(std::span<const int64_t>(&i, 1)));
      if (row < 0) row += R;
    }
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        volatile float p = static_cast<float>(A.get_linear(row * K + k)) *
                           static_cast<float>(B.get_linear(k * N + n));
        acc += p;
      }
      c[m * N + n] = acc;
    }
  }
  return c;
}

}  // namespace tilefuse::runtime::testing
