// KernelBuilder -> printed text, compared exactly (the golden form of the
// Tile IR that `tilefuse emit --stage=tir` shows).
#include <gtest/gtest.h>

#include "test_kernels.h"
#include "tir/builder.h"
#include "tir/printer.h"
#include "tir/verifier.h"

namespace tilefuse::tir {
namespace {

TEST(TirBuilder, GemmGolden) {
  Kernel k = testing::gemm_kernel();
  EXPECT_EQ(verify_errors(k), std::vector<std::string>{});
  EXPECT_EQ(print(k), R"(kernel gemm(
  M: i32,
  N: i32,
  K: i32,
  A: global readonly f16[M, K] strides [K, 1] align 16,
  B: global readonly f16[K, N] strides [N, 1],
  C: global f32[M, N] strides [N, 1],
) grid(pid_m: (M + 127)/128, pid_n: (N + 63)/64) attrs(BLOCK_K = 32, BLOCK_M = 128, BLOCK_N = 64, num_stages = 3) {
  alloc A_s: shared f16[128, 32]
  alloc B_s: shared f16[32, 64]
  alloc C_f: fragment f32[128, 64]
  fill(C_f, 0.0)
  for k in pipelined(0, (K + 31)/32, stages=3) {
    copy (i: 128, j: 32) A_s[i, j] = load_input<f16>("A", [pid_m*128 + i, k*32 + j], mask=(pid_m*128 + i < M && k*32 + j < K))
    copy (i_1: 32, j_1: 64) B_s[i_1, j_1] = load_input<f16>("B", [k*32 + i_1, pid_n*64 + j_1], mask=(k*32 + i_1 < K && pid_n*64 + j_1 < N))
    gemm(A_s, B_s, C_f)
  }
  for i_2 in parallel(0, 128) {
    for j_2 in parallel(0, 64) {
      let m = pid_m*128 + i_2
      let n = pid_n*64 + j_2
      store_output("C", [m, n], C_f[i_2, j_2], mask=(m < M && n < N))
    }
  }
}
)");
}

TEST(TirBuilder, GatherGolden) {
  Kernel k = testing::gather_kernel();
  EXPECT_EQ(verify_errors(k), std::vector<std::string>{});
  EXPECT_EQ(print(k), R"(kernel gather_rows(
  K: i32,
  x: global readonly f16[2048, K] strides [K, 1],
  index: global readonly i64[2048],
  out: global f32[2048, K],
) grid(pid: 16) {
  for m in serial(pid*128, 128) {
    for k in serial(0, (K + 31)/32) {
      for j in unrolled(0, 32) {
        let raw = index[m]
        let row = select(raw < 0_i64, raw + 2048_i64, raw)
        check(row >= 0_i64 && row < 2048_i64, code=1, msg="index {} out of range at position {}", args=[raw, m])
        out[m, k*32 + j] = f32(load(x, [row, i64(k*32 + j)], mask=(k*32 + j < K), other=0.0_f16))*2.0 + exp(-0.5), mask=(k*32 + j < K)
      }
    }
  }
}
)");
}

TEST(TirBuilder, NumbersTakeTheExprDtypeAndNothingFolds) {
  Var i("i", DType::I64);
  Var x("x", DType::F16);
  EXPECT_EQ(print(i * 1 + 0), "i*1_i64 + 0_i64");
  EXPECT_EQ(print(2 - i), "2_i64 - i");
  EXPECT_EQ(print(x * 0.5), "x*0.5_f16");
  EXPECT_EQ(print(-x), "neg(x)");
  EXPECT_EQ(print(-i), "0_i64 - i");
  EXPECT_EQ(print(!(i < 3) || i == 7), "!(i < 3_i64) || i == 7_i64");
  EXPECT_EQ(print(Expr(5) + 3), "5 + 3");  // not 8: folding is simplify's job
}

TEST(TirBuilder, LetAndAllocScopeOverTheRestOfTheBlock) {
  KernelBuilder b("scopes");
  Buffer out = b.output("out", DType::I32, {4});
  b.program_id("pid", 1);
  Var a = b.let("a", 1);
  b.if_then(
      a > 0,
      [&] {
        Buffer t = b.alloc("t", MemScope::Local, DType::I32, {1});
        b.store(t, {0}, a);
        b.store(out, {0}, load(t, {0}));
      },
      [&] { b.barrier(); });
  b.evaluate(a);
  Kernel k = b.build();
  // let wraps everything after it; alloc wraps the rest of the then-branch.
  const auto* let = k.body.as<LetStmtNode>();
  ASSERT_NE(let, nullptr);
  const auto* seq = let->body.as<SeqNode>();
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->stmts.size(), 2u);
  const auto* branch = seq->stmts[0].as<IfThenElseNode>();
  ASSERT_NE(branch, nullptr);
  EXPECT_NE(branch->then_case.as<AllocateNode>(), nullptr);
  EXPECT_NE(branch->else_case.as<BarrierNode>(), nullptr);
  EXPECT_EQ(verify_errors(k), std::vector<std::string>{});
  EXPECT_EQ(print(k.body), R"(let a = 1
if a > 0 {
  alloc t: local i32[1]
  t[0] = a
  out[0] = t[0]
} else {
  barrier()
}
evaluate(a)
)");
}

TEST(TirBuilder, CopyRegionAndGemmTiles) {
  KernelBuilder b("tiles");
  Buffer src = b.input("src", DType::BF16, {64, 64});
  b.program_id("pid", 1);
  Buffer s = b.alloc("s", MemScope::Shared, DType::BF16, {2, 16, 64});
  Buffer acc = b.alloc("acc", MemScope::Fragment, DType::F32, {16, 16});
  b.serial("t", 4, [&](Var t) {
    b.copy(s, {16, 64},
           [&](const std::vector<Var>& v) {
             return CopyBody{{t % 2, v[0], v[1]}, load(src, {t * 16 + v[0], v[1]})};
           },
           {"r", "c"});
    b.gemm(TileRef(s, {t % 2}), TileRef(s, {t % 2}), acc, false, true);
  });
  Kernel k = b.build();
  EXPECT_EQ(print(k.body), R"(alloc s: shared bf16[2, 16, 64]
alloc acc: fragment f32[16, 16]
for t in serial(0, 4) {
  copy (r: 16, c: 64) s[t%2, r, c] = src[t*16 + r, c]
  gemm(s[t%2], s[t%2], acc, trans_b)
}
)");
  EXPECT_EQ(verify_errors(k), std::vector<std::string>{});
}

TEST(TirBuilder, BuildTwiceIsAnInternalError) {
  KernelBuilder b("k");
  b.build();
  EXPECT_THROW(b.barrier(), InternalError);
}

}  // namespace
}  // namespace tilefuse::tir
