// CPU executor semantics: integer wrap and floor division, casts, every
// intrinsic, masks that keep out-of-range addresses from memory, the bounds
// check, per-instance buffers, checks in scalar code, transposed gemms.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "exec_test_util.h"
#include "runtime/cpu/executor.h"

namespace tilefuse::runtime::testing {
namespace {

using tir::ExprKind;
using tir::Intrinsic;

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// The int64 result of `kind` on a, b before wrapping.
int64_t int_op(ExprKind kind, int64_t a, int64_t b) {
  switch (kind) {
    case ExprKind::Add:
      return static_cast<int64_t>(uint64_t(a) + uint64_t(b));
    case ExprKind::Sub:
      return static_cast<int64_t>(uint64_t(a) - uint64_t(b));
    case ExprKind::Mul:
      return static_cast<int64_t>(uint64_t(a) * uint64_t(b));
    case ExprKind::Div:
      return b == -1 ? static_cast<int64_t>(0 - uint64_t(a)) : floor_div(a, b);
    case ExprKind::Mod:
      return b == -1 ? 0 : a - floor_div(a, b) * b;
    case ExprKind::Min:
      return std::min(a, b);
    case ExprKind::Max:
      return std::max(a, b);
    default:
      return 0;
  }
}

int64_t wrap(DType dt, int64_t v) {
  switch (dt) {
    case DType::I8:
      return static_cast<int8_t>(v);
    case DType::U8:
      return static_cast<uint8_t>(v);
    case DType::I32:
      return static_cast<int32_t>(v);
    default:
      return v;
  }
}

TEST(CpuExecutorSemantics, IntegerOpsWrapAndFloor) {
  const std::vector<ExprKind> ops = {ExprKind::Add, ExprKind::Sub, ExprKind::Mul, ExprKind::Div,
                                     ExprKind::Mod, ExprKind::Min, ExprKind::Max};
  const std::vector<int64_t> av = {7,      -7, 7,   -7,  2147483647, -2147483648, -2147483648,
                                   100000, -1, 255, 128, -129,       1,           13};
  const std::vector<int64_t> bv = {2, 2, -2, -2, 1, -1, 2147483647, 99999, 3, 1, -128, 7, -1, -5};
  const int64_t n = static_cast<int64_t>(av.size());
  for (DType dt : {DType::I32, DType::I8, DType::U8, DType::I64}) {
    KernelBuilder b("ints");
    Var N = b.scalar_param("N");
    Buffer A = b.input("a", DType::I64, {N}), B = b.input("b", DType::I64, {N});
    Buffer O = b.output("out", dt, {static_cast<int>(ops.size()), N});
    b.program_id("p", 1);
    b.parallel("i", N, [&](Var i) {
      // Inputs are wrapped to dt by the cast first (i64 -> dt wraps).
      Expr x = tir::cast(dt, tir::load(A, {i})), y = tir::cast(dt, tir::load(B, {i}));
      for (size_t o = 0; o < ops.size(); ++o)
        b.store(O, {static_cast<int>(o), i}, tir::make_binary(ops[o], x, y));
    });
    Kernel k = b.build();
    tir::verify(k);
    Tensor a = Tensor::empty(DType::I64, {n}), bt = Tensor::empty(DType::I64, {n});
    for (int64_t i = 0; i < n; ++i) {
      a.set_linear(i, static_cast<double>(av[i]));
      bt.set_linear(i, static_cast<double>(bv[i]));
    }
    Tensor out = poisoned(dt, {static_cast<int64_t>(ops.size()), n});
    execute(k, {{"N", n}, {"a", a}, {"b", bt}, {"out", out}});
    for (size_t o = 0; o < ops.size(); ++o)
      for (int64_t i = 0; i < n; ++i) {
        const int64_t x = wrap(dt, av[i]), y = wrap(dt, bv[i]);
        if (y == 0) continue;  // not exercised: x / 0 is 0 by the executor's choice
        const int64_t want = wrap(dt, int_op(ops[o], x, y));
        ASSERT_EQ(out.get_linear(static_cast<int64_t>(o) * n + i), static_cast<double>(want))
            << dtype_name(dt) << " op " << o << ": " << x << ", " << y;
      }
  }
}

TEST(CpuExecutorSemantics, CastsTruncateWrapAndRound) {
  const std::vector<double> xv = {-3.7,     2.5,   1e10,   -1e10,   NAN,
                                  INFINITY, 300.5, -129.9, 65519.0, 1.0000001};
  const int64_t n = static_cast<int64_t>(xv.size());
  KernelBuilder b("casts");
  Var N = b.scalar_param("N");
  Buffer X = b.input("x", DType::F64, {N});
  Buffer oi = b.output("oi", DType::I32, {N}), o8 = b.output("o8", DType::I8, {N});
  Buffer ou = b.output("ou", DType::U8, {N}), ob = b.output("ob", DType::Bool, {N});
  Buffer oh = b.output("oh", DType::F16, {N}), of = b.output("of", DType::F32, {N});
  b.program_id("p", 1);
  b.parallel("i", N, [&](Var i) {
    Expr x = tir::load(X, {i});
    b.store(oi, {i}, tir::cast(DType::I32, x));
    b.store(o8, {i}, tir::cast(DType::I8, x));
    b.store(ou, {i}, tir::cast(DType::U8, x));
    b.store(ob, {i}, tir::cast(DType::Bool, x));
    b.store(oh, {i}, tir::cast(DType::F16, x));
    b.store(of, {i}, tir::cast(DType::F32, tir::cast(DType::I32, x)));
  });
  Kernel k = b.build();
  tir::verify(k);
  Tensor x = Tensor::empty(DType::F64, {n});
  for (int64_t i = 0; i < n; ++i) x.set_linear(i, xv[i]);
  std::vector<Tensor> outs = {poisoned(DType::I32, {n}), poisoned(DType::I8, {n}),
                              poisoned(DType::U8, {n}),  poisoned(DType::Bool, {n}),
                              poisoned(DType::F16, {n}), poisoned(DType::F32, {n})};
  execute(k, {{"N", n},
              {"x", x},
              {"oi", outs[0]},
              {"o8", outs[1]},
              {"ou", outs[2]},
              {"ob", outs[3]},
              {"oh", outs[4]},
              {"of", outs[5]}});
  for (int64_t i = 0; i < n; ++i) {
    const double v = xv[i];
    const int64_t t = std::isfinite(v) ? static_cast<int64_t>(std::trunc(v)) : 0;
    EXPECT_EQ(outs[0].get_linear(i), static_cast<double>(static_cast<int32_t>(t))) << v;
    EXPECT_EQ(outs[1].get_linear(i), static_cast<double>(static_cast<int8_t>(t))) << v;
    EXPECT_EQ(outs[2].get_linear(i), static_cast<double>(static_cast<uint8_t>(t))) << v;
    EXPECT_EQ(outs[3].get_linear(i), v != 0 ? 1.0 : 0.0) << v;
    const double h = round_to(DType::F16, v);
    if (std::isnan(v))
      EXPECT_TRUE(std::isnan(outs[4].get_linear(i)));
    else
      EXPECT_EQ(outs[4].get_linear(i), h) << v;
    EXPECT_EQ(outs[5].get_linear(i),
              static_cast<double>(static_cast<float>(static_cast<int32_t>(t))));
  }
}

// The expected value of an intrinsic, computed directly in T.
template <class T>
T intrinsic_ref(Intrinsic op, T x, T y, T z) {
  switch (op) {
    case Intrinsic::Neg:
      return -x;
    case Intrinsic::Abs:
      return std::fabs(x);
    case Intrinsic::Exp:
      return std::exp(x);
    case Intrinsic::Exp2:
      return std::exp2(x);
    case Intrinsic::Log:
      return std::log(x);
    case Intrinsic::Log2:
      return std::log2(x);
    case Intrinsic::Sqrt:
      return std::sqrt(x);
    case Intrinsic::Rsqrt:
      return T(1) / std::sqrt(x);
    case Intrinsic::Tanh:
      return std::tanh(x);
    case Intrinsic::Erf:
      return std::erf(x);
    case Intrinsic::Sigmoid:
      return T(1) / (T(1) + std::exp(-x));
    case Intrinsic::Sin:
      return std::sin(x);
    case Intrinsic::Cos:
      return std::cos(x);
    case Intrinsic::Floor:
      return std::floor(x);
    case Intrinsic::Ceil:
      return std::ceil(x);
    case Intrinsic::Hypot:
      return std::hypot(x, y);
    case Intrinsic::Pow:
      return std::pow(x, y);
    case Intrinsic::Fma:
      return std::fma(x, y, z);
  }
  return x;
}

TEST(CpuExecutorSemantics, EveryIntrinsic) {
  std::vector<Intrinsic> all;
#define TF_ADD(name, ...) all.push_back(Intrinsic::name);
  TILEFUSE_FOR_EACH_TIR_INTRINSIC(TF_ADD)
#undef TF_ADD
  const int64_t n = 50;
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    // Positive inputs keep log / sqrt / pow finite; signs come from x - 1.
    Tensor xs = random_tensor(dt, {n}, 11, 0.05, 3), ys = random_tensor(dt, {n}, 12, 0.05, 2),
           zs = random_tensor(dt, {n}, 13, -2, 2);
    for (Intrinsic op : all) {
      KernelBuilder b("intrinsic");
      Var N = b.scalar_param("N");
      Buffer X = b.input("x", dt, {N}), Y = b.input("y", dt, {N}), Z = b.input("z", dt, {N});
      Buffer O = b.output("out", dt, {N});
      b.program_id("p", 1);
      b.parallel("i", N, [&](Var i) {
        std::vector<Expr> args = {tir::load(X, {i}) - tir::make_const(dt, 1), tir::load(Y, {i}),
                                  tir::load(Z, {i})};
        if (op == Intrinsic::Log || op == Intrinsic::Log2 || op == Intrinsic::Sqrt ||
            op == Intrinsic::Rsqrt || op == Intrinsic::Pow)
          args[0] = tir::load(X, {i});
        args.resize(static_cast<size_t>(tir::intrinsic_arity(op)));
        b.store(O, {i}, tir::call(op, args));
      });
      Kernel k = b.build();
      tir::verify(k);
      Tensor out = poisoned(dt, {n});
      execute(k, {{"N", n}, {"x", xs}, {"y", ys}, {"z", zs}, {"out", out}});
      const bool shifted =
          !(op == Intrinsic::Log || op == Intrinsic::Log2 || op == Intrinsic::Sqrt ||
            op == Intrinsic::Rsqrt || op == Intrinsic::Pow);
      for (int64_t i = 0; i < n; ++i) {
        double x = xs.get_linear(i), y = ys.get_linear(i), z = zs.get_linear(i);
        if (shifted) x = round_to(dt, x - 1);
        double want;
        if (dt == DType::F32) {
          want = intrinsic_ref<float>(op, static_cast<float>(x), static_cast<float>(y),
                                      static_cast<float>(z));
        } else {
          want = round_to(dt, intrinsic_ref<double>(op, x, y, z));
        }
        ASSERT_EQ(out.get_linear(i), want)
            << dtype_name(dt) << " " << tir::intrinsic_name(op) << "(" << x << ", " << y << ")";
      }
    }
  }
  // neg / abs on integers wrap (abs(INT_MIN) == INT_MIN).
  KernelBuilder b("int_intrinsics");
  Buffer X = b.input("x", DType::I32, {3});
  Buffer out = b.output("out", DType::I32, {2, 3});
  b.program_id("p", 1);
  b.parallel("i", 3, [&](Var i) {
    b.store(out, {0, i}, tir::call(Intrinsic::Neg, {tir::load(X, {i})}));
    b.store(out, {1, i}, tir::call(Intrinsic::Abs, {tir::load(X, {i})}));
  });
  Kernel k = b.build();
  tir::verify(k);
  Tensor x = Tensor::empty(DType::I32, {3});
  x.set_linear(0, -2147483648.0);
  x.set_linear(1, -5);
  x.set_linear(2, 9);
  Tensor o = poisoned(DType::I32, {2, 3});
  execute(k, {{"x", x}, {"out", o}});
  EXPECT_EQ(o.to_vector(), (std::vector<double>{-2147483648.0, 5, -9, -2147483648.0, 5, 9}));
}

// out[i] = load(x, [i + shift], mask) over n points.
Kernel shifted_load_kernel(bool masked) {
  KernelBuilder b("shifted");
  Var n = b.scalar_param("n"), shift = b.scalar_param("shift");
  Buffer x = b.input("x", DType::F32, {n});
  Buffer out = b.output("out", DType::F32, {n});
  b.program_id("p", 1);
  b.parallel("i", n, [&](Var i) {
    Expr j = i + shift;
    Expr v = masked ? tir::load(x, {j}, j >= 0 && j < n, tir::make_const(DType::F32, 5))
                    : tir::load(x, {j});
    b.store(out, {i}, v, masked ? tir::make_bool(true) : i % 2 == 0);
  });
  return b.build();
}

TEST(CpuExecutorSemantics, MaskedLoadsTouchNoMemory) {
  Kernel k = shifted_load_kernel(true);
  tir::verify(k);
  const int64_t n = 40;
  Tensor x = random_tensor(DType::F32, {n}, 14);  // storage holds exactly n elements
  for (int64_t shift : {int64_t{1000000}, int64_t{-1000000}, int64_t{-3}, int64_t{7}}) {
    Tensor out = poisoned(DType::F32, {n});
    execute(k, {{"n", n}, {"shift", shift}, {"x", x}, {"out", out}});
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = i + shift;
      ASSERT_EQ(out.get_linear(i), j >= 0 && j < n ? x.get_linear(j) : 5.0) << shift << " " << i;
    }
  }
}

TEST(CpuExecutorSemantics, UnmaskedOutOfBoundsIsAnInternalError) {
  Kernel k = shifted_load_kernel(false);
  const int64_t n = 40;
  Tensor x = random_tensor(DType::F32, {n}, 15);
  Tensor out = poisoned(DType::F32, {n});
  // Shift 0: in bounds; odd elements are masked off and stay poisoned. With
  // shift 3 the first unmasked offset past the end is 41 (i = 38; i = 37 is
  // masked off by the store, so its load never runs).
  execute(k, {{"n", n}, {"shift", 0}, {"x", x}, {"out", out}});
  for (int64_t i = 0; i < n; ++i) {
    if (i % 2 == 0)
      EXPECT_EQ(out.get_linear(i), x.get_linear(i));
    else
      EXPECT_TRUE(std::isnan(out.get_linear(i)));
  }
  try {
    execute(k, {{"n", n}, {"shift", 3}, {"x", x}, {"out", out}});
    FAIL() << "expected an InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("buffer `x` at element offset 41"), std::string::npos)
        << e.what();
  }
}

TEST(CpuExecutorSemantics, PerInstanceBuffersFillAndBarrier) {
  // Each instance p accumulates row p of x into its own local buffer.
  KernelBuilder b("rows");
  Var R = b.scalar_param("R");
  Buffer x = b.input("x", DType::F32, {R, 8});
  Buffer out = b.output("out", DType::F32, {R, 8});
  Var p = b.program_id("p", R);
  Buffer acc = b.alloc("acc", MemScope::Local, DType::F32, {8});
  b.fill(acc, tir::cast(DType::F32, p));
  b.serial("r", 3, [&](Var r) {
    b.parallel("j", 8, [&](Var j) {
      b.store(acc, {j}, tir::load(acc, {j}) + tir::load(x, {p, j}) * tir::cast(DType::F32, r));
    });
    b.barrier();
  });
  b.parallel("j", 8, [&](Var j) { b.store(out, {p, j}, tir::load(acc, {j})); });
  Kernel k = b.build();
  tir::verify(k);
  const int64_t R_ = 33;
  Tensor xt = random_tensor(DType::F32, {R_, 8}, 16);
  for (int threads : {1, 3}) {
    Tensor o = poisoned(DType::F32, {R_, 8});
    execute(k, {{"R", R_}, {"x", xt}, {"out", o}}, {.num_threads = threads});
    for (int64_t i = 0; i < R_; ++i)
      for (int64_t j = 0; j < 8; ++j) {
        float want = static_cast<float>(i);
        for (int r = 0; r < 3; ++r) want += static_cast<float>(xt.get_linear(i * 8 + j)) * r;
        ASSERT_EQ(o.get_linear(i * 8 + j), want);
      }
  }
}

TEST(CpuExecutorSemantics, CheckInScalarCodeFormatsFloats) {
  KernelBuilder b("scalar_check");
  Buffer x = b.input("x", DType::F32, {4});
  Var p = b.program_id("p", 4);
  Var v = b.let("v", tir::load(x, {p}));
  b.check(v < 10.0f, 3, "value {} too big at {}", {v, p});
  Kernel k = b.build();
  tir::verify(k);
  Tensor t = Tensor::full(DType::F32, {4}, 1.5);
  execute(k, {{"x", t}});
  t.set_linear(2, 12.5);
  try {
    execute(k, {{"x", t}});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "value 12.5 too big at 2");
  }
}

TEST(CpuExecutorSemantics, TransposedGemmInF64) {
  // C[M, N] = A[K, M]^T @ B[N, K]^T, one instance, f64 accumulate.
  const int M = 19, N = 23, K = 30;
  KernelBuilder b("gemm_t");
  Buffer A = b.input("A", DType::F64, {K, M}), B = b.input("B", DType::F64, {N, K});
  Buffer C = b.output("C", DType::F64, {M, N});
  b.program_id("p", 1);
  Buffer A_s = b.alloc("A_s", MemScope::Shared, DType::F64, {K, M});
  Buffer B_s = b.alloc("B_s", MemScope::Shared, DType::F64, {N, K});
  Buffer C_f = b.alloc("C_f", MemScope::Fragment, DType::F64, {M, N});
  b.fill(C_f, tir::make_const(DType::F64, 0.5));
  b.copy(A_s, [&](const std::vector<Var>& ij) { return tir::load(A, {ij[0], ij[1]}); });
  b.copy(B_s, [&](const std::vector<Var>& ij) { return tir::load(B, {ij[0], ij[1]}); });
  b.gemm(A_s, B_s, C_f, /*trans_a=*/true, /*trans_b=*/true);
  b.copy(C, [&](const std::vector<Var>& ij) { return tir::load(C_f, {ij[0], ij[1]}); });
  Kernel k = b.build();
  tir::verify(k);
  Tensor a = random_tensor(DType::F64, {K, M}, 17), bt = random_tensor(DType::F64, {N, K}, 18);
  Tensor c = poisoned(DType::F64, {M, N});
  execute(k, {{"A", a}, {"B", bt}, {"C", c}});
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0.5;
      for (int kk = 0; kk < K; ++kk) {
        volatile double p = a.get_linear(kk * M + i) * bt.get_linear(j * K + kk);
        acc += p;
      }
      ASSERT_EQ(c.get_linear(i * N + j), acc) << i << "," << j;
    }
}

}  // namespace
}  // namespace tilefuse::runtime::testing
