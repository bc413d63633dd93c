// Kernels shared by the Tile IR tests, built with the KernelBuilder.
#pragma once

#include "tir/builder.h"

namespace tilefuse::tir::testing {

// A GEMM template in miniature: C[M, N] (f32) = A[M, K] @ B[K, N] (f16),
// 128x64x32 tiles, a pipelined K loop with masked hook loads, a masked
// epilogue through store_output.
inline Kernel gemm_kernel() {
  KernelBuilder b("gemm");
  Var M = b.scalar_param("M"), N = b.scalar_param("N"), K = b.scalar_param("K");
  b.input("A", DType::F16, {M, K}, {K, 1}, 16);
  b.input("B", DType::F16, {K, N}, {N, 1});
  b.output("C", DType::F32, {M, N}, {N, 1});
  Var pid_m = b.program_id("pid_m", (M + 127) / 128);
  Var pid_n = b.program_id("pid_n", (N + 63) / 64);
  b.set_attr("BLOCK_M", int64_t{128});
  b.set_attr("BLOCK_N", int64_t{64});
  b.set_attr("BLOCK_K", int64_t{32});
  b.set_attr("num_stages", int64_t{3});
  Buffer A_s = b.alloc("A_s", MemScope::Shared, DType::F16, {128, 32});
  Buffer B_s = b.alloc("B_s", MemScope::Shared, DType::F16, {32, 64});
  Buffer C_f = b.alloc("C_f", MemScope::Fragment, DType::F32, {128, 64});
  b.fill(C_f, make_const(DType::F32, 0));
  b.pipelined("k", (K + 31) / 32, 3, [&](Var k) {
    b.copy(A_s, [&](const std::vector<Var>& ij) {
      Expr m = pid_m * 128 + ij[0], kk = k * 32 + ij[1];
      return b.load_input("A", {m, kk}, DType::F16, m < M && kk < K);
    });
    b.copy(B_s, [&](const std::vector<Var>& ij) {
      Expr kk = k * 32 + ij[0], n = pid_n * 64 + ij[1];
      return b.load_input("B", {kk, n}, DType::F16, kk < K && n < N);
    });
    b.gemm(A_s, B_s, C_f);
  });
  b.parallel("i", 128, [&](Var i) {
    b.parallel("j", 64, [&](Var j) {
      Var m = b.let("m", pid_m * 128 + i);
      Var n = b.let("n", pid_n * 64 + j);
      b.store_output("C", {m, n}, load(C_f, {i, j}), m < M && n < N);
    });
  });
  return b.build();
}

// A lowered gather row loop: out[m, k] = x[wrap(index[m]), k] for one row
// block, with the bounds check, 64-bit offsets and K-tail masks.
inline Kernel gather_kernel() {
  KernelBuilder b("gather_rows");
  Var K = b.scalar_param("K");
  Buffer x = b.input("x", DType::F16, {2048, K}, {K, 1});
  Buffer index = b.input("index", DType::I64, {2048});
  Buffer out = b.output("out", DType::F32, {2048, K});
  Var pid = b.program_id("pid", 16);
  b.for_range("m", pid * 128, 128, [&](Var m) {
    b.serial("k", (K + 31) / 32, [&](Var k) {
      b.for_range(
          "j", 0, 32,
          [&](Var j) {
            Var raw = b.let("raw", load(index, {m}));
            Var row = b.let("row", select(raw < 0, raw + 2048, raw));
            b.check(row >= 0 && row < 2048, 1, "index {} out of range at position {}", {raw, m});
            Expr col = k * 32 + j;
            Expr v = load(x, {row, cast(DType::I64, col)}, col < K, make_const(DType::F16, 0));
            b.store(
                out, {m, col},
                cast(DType::F32, v) * 2.0f + call(Intrinsic::Exp, {make_const(DType::F32, -0.5)}),
                col < K);
          },
          ForKind::Unrolled);
    });
  });
  return b.build();
}

}  // namespace tilefuse::tir::testing
