// licm: text in -> hoist_loop_invariants -> text out, compared line by line;
// then differentially: every shared case runs bit for bit the same (or fails
// with the same check) with and without licm on the CPU executor.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "../tir/test_kernels.h"
#include "frontend/frontend.h"
#include "lower/lower.h"
#include "passes/licm.h"
#include "passes/lower_copies.h"
#include "reference/inputs.h"
#include "runtime/cpu/executor.h"
#include "schedule/schedule.h"
#include "tir/parser.h"
#include "tir/printer.h"
#include "tir/verifier.h"

namespace tilefuse::passes {
namespace {

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Runs licm on `in` and compares with `expected`; a failure prints all three.
void expect_licm(const std::string& in, const std::string& expected, LicmReport* report = nullptr) {
  tir::Kernel k = tir::parse_kernel(in);
  tir::verify(k, "licm test input");
  tir::Kernel out = hoist_loop_invariants(k, report);
  tir::verify(out, "after licm", {.allow_hooks = false});
  std::string got = tir::print(out);
  std::vector<std::string> g = lines(got), e = lines(expected);
  bool same = g == e;
  EXPECT_TRUE(same) << "input:\n" << in << "\noutput:\n" << got << "\nexpected:\n" << expected;
  if (!same) {
    for (size_t i = 0; i < std::max(g.size(), e.size()); ++i) {
      std::string gl = i < g.size() ? g[i] : "<none>", el = i < e.size() ? e[i] : "<none>";
      if (gl != el) {
        ADD_FAILURE() << "first difference at line " << i + 1 << ":\n  got:      " << gl
                      << "\n  expected: " << el;
        break;
      }
    }
  }
}

TEST(Licm, InvariantLoadHoistedWithEntryGuard) {
  expect_licm(R"(kernel t(
  n: i32,
  index: global readonly i64[4],
  out: global f32[4, n],
) grid(p: 4) {
  for k in serial(0, n) {
    let raw = index[p]
    out[p, k] = f32(raw)
  }
}
)",
              R"(kernel t(
  n: i32,
  index: global readonly i64[4],
  out: global f32[4, n],
) grid(p: 4) {
  let raw = load(index, [p], mask=(n > 0))
  for k in serial(0, n) {
    out[p, k] = f32(raw)
  }
}
)");
}

// A load from a buffer the loop stores to stays.
TEST(Licm, StoredBufferNotHoisted) {
  expect_licm(R"(kernel t(
  n: i32,
  acc: global f32[4],
  out: global f32[4, n],
) grid(p: 4) {
  for k in serial(0, n) {
    let a = acc[p]
    out[p, k] = a
    acc[p] = a + 1.0
  }
}
)",
              R"(kernel t(
  n: i32,
  acc: global f32[4],
  out: global f32[4, n],
) grid(p: 4) {
  for k in serial(0, n) {
    let a = acc[p]
    out[p, k] = a
    acc[p] = a + 1.0
  }
}
)");
}

// A load whose address depends on k stays.
TEST(Licm, AddressDependsOnKNotHoisted) {
  expect_licm(R"(kernel t(
  n: i32,
  x: global readonly f32[4, n],
  out: global f32[4, n],
) grid(p: 4) {
  for k in serial(0, n) {
    let v = x[p, k]
    out[p, k] = exp(v)
  }
}
)",
              R"(kernel t(
  n: i32,
  x: global readonly f32[4, n],
  out: global f32[4, n],
) grid(p: 4) {
  for k in serial(0, n) {
    let v = x[p, k]
    out[p, k] = exp(v)
  }
}
)");
}

// The K-tail conjunct only guards the x load: the row-index load leaves the
// k loop with `m < M` (which bounds m) and the entry guard; the j loop
// (constant extent) needs no guard.
TEST(Licm, KTailConjunctDropped) {
  expect_licm(R"(kernel t(
  M: i32,
  K: i32,
  index: global readonly i64[M],
  x: global readonly f16[2048, K],
  out: global f16[M, K],
) grid(pid: (M + 127)/128) {
  for i in serial(0, 128) {
    let m = pid*128 + i
    for k in serial(0, (K + 31)/32) {
      for j in unrolled(0, 32) {
        let raw = load(index, [m], mask=(m < M && k*32 + j < K))
        out[m, k*32 + j] = load(x, [raw, i64(k*32 + j)], mask=(m < M && k*32 + j < K)), mask=(m < M && k*32 + j < K)
      }
    }
  }
}
)",
              R"(kernel t(
  M: i32,
  K: i32,
  index: global readonly i64[M],
  x: global readonly f16[2048, K],
  out: global f16[M, K],
) grid(pid: (M + 127)/128) {
  for i in serial(0, 128) {
    let m = pid*128 + i
    let raw = load(index, [m], mask=(m < M && (K + 31)/32 > 0))
    for k in serial(0, (K + 31)/32) {
      for j in unrolled(0, 32) {
        out[m, k*32 + j] = load(x, [raw, i64(k*32 + j)], mask=(m < M && k*32 + j < K)), mask=(m < M && k*32 + j < K)
      }
    }
  }
}
)");
}

// pid + 1 < M is not provable, so the k-dependent conjunct is replaced by
// its value at the first iteration (k = 0): the hoisted load reads only an
// address the loop read in its first iteration.
TEST(Licm, ConjunctTakesFirstIterationValueWhenAddressUnproven) {
  expect_licm(R"(kernel t(
  M: i32,
  K: i32,
  index: global readonly i64[M],
  out: global i64[M, K],
) grid(pid: M) {
  for k in serial(0, K) {
    let raw = load(index, [pid + 1], mask=(k < K))
    out[pid, k] = raw
  }
}
)",
              R"(kernel t(
  M: i32,
  K: i32,
  index: global readonly i64[M],
  out: global i64[M, K],
) grid(pid: M) {
  let raw = load(index, [pid + 1], mask=(0 < K && K > 0))
  for k in serial(0, K) {
    out[pid, k] = raw
  }
}
)");
}

// A conjunct over a let of the loop is read modulo that let: `t < K` with
// `let t = k*2` (evaluated before the load in the same iteration) has the
// first-iteration value `0 < K`, so the load leaves; the let stays.
TEST(Licm, ConjunctOverLoopLetTakesItsFirstIterationValue) {
  expect_licm(R"(kernel t(
  M: i32,
  K: i32,
  index: global readonly i64[M],
  out: global i64[M, K],
) grid(pid: M) {
  for k in serial(0, K) {
    let t = k*2
    let raw = load(index, [pid + 1], mask=(t < K))
    out[pid, k] = raw
  }
}
)",
              R"(kernel t(
  M: i32,
  K: i32,
  index: global readonly i64[M],
  out: global i64[M, K],
) grid(pid: M) {
  let raw = load(index, [pid + 1], mask=(0 < K && K > 0))
  for k in serial(0, K) {
    let t = k*2
    out[pid, k] = raw
  }
}
)");
}

// A let of the loop whose value reads a buffer the loop writes has no
// hoistable first-iteration value: the load it guards stays.
TEST(Licm, ConjunctOverLetOfWrittenBufferKeepsLoadInLoop) {
  const std::string in = R"(kernel t(
  M: i32,
  K: i32,
  index: global readonly i64[M],
  lim: global i32[1],
  out: global i64[M, K],
) grid(pid: M) {
  for k in serial(0, K) {
    let t = lim[0] + k
    let raw = load(index, [pid + 1], mask=(t < K))
    out[pid, k] = raw
    lim[0] = t
  }
}
)";
  expect_licm(in, in);
}

// What cse leaves in the gather GEMM's K loop when M is a multiple of
// BLOCK_M and K has a tail (tests/unit/lower/pipeline_test.cpp): the row
// index load's only conjunct is the K tail over `let cse = k*32`, bound in
// the loop body (here through a second let). The witness lane (k = 0,
// j = 0) sees through both lets, so the index is materialized before the
// K loop as without them.
TEST(Licm, KTailConjunctOverLoopBodyLetsLeavesKLoop) {
  expect_licm(R"(kernel t(
  K: i32,
  index: global readonly i64[2048],
  x: global readonly f16[4096, K] strides [K, 1] align 16,
) grid(pid_m: 16) {
  alloc A_s: shared f16[128, 32]
  for k in pipelined(0, (K + 31)/32, stages=2) {
    let cse = k*32
    let cse_1 = cse + 1
    copy (i: 128, j: 32) A_s[i, j] = load(x, [select(load(index, [pid_m*128 + i], mask=(cse_1 + j < K)) < 0_i64, load(index, [pid_m*128 + i], mask=(cse_1 + j < K)) + 4096_i64, load(index, [pid_m*128 + i], mask=(cse_1 + j < K))), i64(cse + j)], mask=(cse + j < K))
  }
}
)",
              R"(kernel t(
  K: i32,
  index: global readonly i64[2048],
  x: global readonly f16[4096, K] strides [K, 1] align 16,
) grid(pid_m: 16) {
  alloc A_s: shared f16[128, 32]
  alloc index_rows: shared i64[128]
  copy (i: 128) index_rows[i] = select(load(index, [pid_m*128 + i], mask=(1 < K && (K + 31)/32 > 0)) < 0_i64, load(index, [pid_m*128 + i], mask=(1 < K && (K + 31)/32 > 0)) + 4096_i64, load(index, [pid_m*128 + i], mask=(1 < K && (K + 31)/32 > 0)))
  barrier()
  for k in pipelined(0, (K + 31)/32, stages=2) {
    let cse = k*32
    let cse_1 = cse + 1
    copy (i_1: 128, j: 32) A_s[i_1, j] = load(x, [index_rows[i_1], i64(cse + j)], mask=(cse + j < K))
  }
}
)");
}

// The bounds check leaves with its load and the wrap, guarded by the same
// entry condition.
TEST(Licm, CheckHoistedWithItsLoad) {
  expect_licm(R"(kernel t(
  K: i32,
  index: global readonly i64[16],
  x: global readonly f16[2048, K],
  out: global f32[16, K],
) grid(pid: 16) {
  for k in serial(0, K) {
    let raw = index[pid]
    let row = select(raw < 0_i64, raw + 2048_i64, raw)
    check(row >= 0_i64 && row < 2048_i64, code=1, msg="index {} out of range at {}", args=[raw, pid])
    out[pid, k] = f32(load(x, [row, i64(k)], mask=(row >= 0_i64 && row < 2048_i64)))
  }
}
)",
              R"(kernel t(
  K: i32,
  index: global readonly i64[16],
  x: global readonly f16[2048, K],
  out: global f32[16, K],
) grid(pid: 16) {
  let raw = load(index, [pid], mask=(K > 0))
  let row = select(raw < 0_i64, raw + 2048_i64, raw)
  if K > 0 {
    check(row >= 0_i64 && row < 2048_i64, code=1, msg="index {} out of range at {}", args=[raw, pid])
  }
  for k in serial(0, K) {
    out[pid, k] = f32(load(x, [row, i64(k)], mask=(row >= 0_i64 && row < 2048_i64)))
  }
}
)");
}

// A check that an unhoisted check precedes stays: hoisting it could change
// which error the user sees. Its load still leaves.
TEST(Licm, CheckAfterUnhoistedCheckStays) {
  expect_licm(R"(kernel t(
  K: i32,
  index: global readonly i64[16],
  out: global i64[16, K],
) grid(pid: 16) {
  for k in serial(0, K) {
    check(k < 100, code=2, msg="k {} too large", args=[k])
    let raw = index[pid]
    check(raw >= 0_i64, code=1, msg="negative {}", args=[raw])
    out[pid, k] = raw
  }
}
)",
              R"(kernel t(
  K: i32,
  index: global readonly i64[16],
  out: global i64[16, K],
) grid(pid: 16) {
  let raw = load(index, [pid], mask=(K > 0))
  for k in serial(0, K) {
    check(k < 100, code=2, msg="k {} too large", args=[k])
    check(raw >= 0_i64, code=1, msg="negative {}", args=[raw])
    out[pid, k] = raw
  }
}
)");
}

// scale[0] leaves both loops (guarded by both entry conditions); index[m]
// only the inner one.
TEST(Licm, NestedOutermostLevel) {
  expect_licm(R"(kernel t(
  M: i32,
  N: i32,
  scale: global readonly f32[1],
  index: global readonly i64[M],
  out: global f32[M, N],
) grid(p: 1) {
  for m in serial(0, M) {
    for n in serial(0, N) {
      let s = scale[0]
      let r = index[m]
      out[m, n] = s*f32(r)
    }
  }
}
)",
              R"(kernel t(
  M: i32,
  N: i32,
  scale: global readonly f32[1],
  index: global readonly i64[M],
  out: global f32[M, N],
) grid(p: 1) {
  let s = load(scale, [0], mask=(N > 0 && M > 0))
  for m in serial(0, M) {
    let r = load(index, [m], mask=(N > 0))
    for n in serial(0, N) {
      out[m, n] = s*f32(r)
    }
  }
}
)");
}

// A constant zero-trip loop is left alone; a loop whose extent may be <= 0
// guards the hoisted load; a constant positive extent needs no guard.
TEST(Licm, ZeroTripLoop) {
  expect_licm(R"(kernel t(
  n: i32,
  index: global readonly i64[4],
  out: global i64[4, 8],
) grid(p: 4) {
  for k in serial(0, 0) {
    out[p, k] = index[p]
  }
  for k2 in serial(0, n - 8) {
    out[p, k2] = index[p] + 1_i64
  }
  for k3 in serial(0, 8) {
    out[p, k3] = index[p]*2_i64
  }
}
)",
              R"(kernel t(
  n: i32,
  index: global readonly i64[4],
  out: global i64[4, 8],
) grid(p: 4) {
  for k in serial(0, 0) {
    out[p, k] = index[p]
  }
  let inv = load(index, [p], mask=(n - 8 > 0)) + 1_i64
  for k2 in serial(0, n - 8) {
    out[p, k2] = inv
  }
  let inv_1 = index[p]*2_i64
  for k3 in serial(0, 8) {
    out[p, k3] = inv_1
  }
}
)");
}

// The gather GEMM after inline_hooks: the bounds-check nest (over the copy
// region) leaves the K loop with its k-dependent mask conjunct dropped,
// and the wrapped row index, which varies only along the copy's row dim, is
// materialized once per row into shared memory before the K loop. The K
// loop keeps only the tile loads.
TEST(Licm, GatherGemm) {
  expect_licm(R"(kernel gather_mm(
  M: i32,
  N: i32,
  K: i32,
  index: global readonly i64[M],
  x: global readonly f16[4096, K] strides [K, 1] align 16,
  y: global readonly f16[K, N] strides [N, 1] align 16,
  C: global f32[M, N] strides [N, 1],
) grid(pid_m: (M + 127)/128, pid_n: (N + 63)/64) {
  alloc A_s: shared f16[128, 32]
  alloc B_s: shared f16[32, 64]
  alloc C_f: fragment f32[128, 64]
  fill(C_f, 0.0)
  for k in pipelined(0, (K + 31)/32, stages=3) {
    for i in parallel(0, 128) {
      for j in parallel(0, 32) {
        check(!(pid_m*128 + i < M) || select(load(index, [pid_m*128 + i], mask=(pid_m*128 + i < M && k*32 + j < K)) < 0_i64, load(index, [pid_m*128 + i], mask=(pid_m*128 + i < M && k*32 + j < K)) + 4096_i64, load(index, [pid_m*128 + i], mask=(pid_m*128 + i < M && k*32 + j < K))) >= 0_i64 && select(load(index, [pid_m*128 + i], mask=(pid_m*128 + i < M && k*32 + j < K)) < 0_i64, load(index, [pid_m*128 + i], mask=(pid_m*128 + i < M && k*32 + j < K)) + 4096_i64, load(index, [pid_m*128 + i], mask=(pid_m*128 + i < M && k*32 + j < K))) < 4096_i64, code=1, msg="index {} out of bounds", args=[load(index, [pid_m*128 + i], mask=(pid_m*128 + i < M && k*32 + j < K))])
      }
    }
    copy (i_1: 128, j_1: 32) A_s[i_1, j_1] = load(x, [select(load(index, [pid_m*128 + i_1], mask=(pid_m*128 + i_1 < M && k*32 + j_1 < K)) < 0_i64, load(index, [pid_m*128 + i_1], mask=(pid_m*128 + i_1 < M && k*32 + j_1 < K)) + 4096_i64, load(index, [pid_m*128 + i_1], mask=(pid_m*128 + i_1 < M && k*32 + j_1 < K))), i64(k*32 + j_1)], mask=(pid_m*128 + i_1 < M && k*32 + j_1 < K))
    copy (i_2: 32, j_2: 64) B_s[i_2, j_2] = load(y, [k*32 + i_2, pid_n*64 + j_2], mask=(k*32 + i_2 < K && pid_n*64 + j_2 < N))
    gemm(A_s, B_s, C_f)
  }
  for i_3 in parallel(0, 128) {
    for j_3 in parallel(0, 64) {
      C[pid_m*128 + i_3, pid_n*64 + j_3] = C_f[i_3, j_3], mask=(pid_m*128 + i_3 < M && pid_n*64 + j_3 < N)
    }
  }
}
)",
              R"(kernel gather_mm(
  M: i32,
  N: i32,
  K: i32,
  index: global readonly i64[M],
  x: global readonly f16[4096, K] strides [K, 1] align 16,
  y: global readonly f16[K, N] strides [N, 1] align 16,
  C: global f32[M, N] strides [N, 1],
) grid(pid_m: (M + 127)/128, pid_n: (N + 63)/64) {
  alloc A_s: shared f16[128, 32]
  alloc B_s: shared f16[32, 64]
  alloc C_f: fragment f32[128, 64]
  fill(C_f, 0.0)
  if (K + 31)/32 > 0 {
    for i in parallel(0, 128) {
      check(!(pid_m*128 + i < M) || select(load(index, [pid_m*128 + i], mask=(pid_m*128 + i < M)) < 0_i64, load(index, [pid_m*128 + i], mask=(pid_m*128 + i < M)) + 4096_i64, load(index, [pid_m*128 + i], mask=(pid_m*128 + i < M))) >= 0_i64 && select(load(index, [pid_m*128 + i], mask=(pid_m*128 + i < M)) < 0_i64, load(index, [pid_m*128 + i], mask=(pid_m*128 + i < M)) + 4096_i64, load(index, [pid_m*128 + i], mask=(pid_m*128 + i < M))) < 4096_i64, code=1, msg="index {} out of bounds", args=[load(index, [pid_m*128 + i], mask=(pid_m*128 + i < M))])
    }
  }
  alloc index_rows: shared i64[128]
  copy (i_1: 128) index_rows[i_1] = select(load(index, [pid_m*128 + i_1], mask=(pid_m*128 + i_1 < M && (K + 31)/32 > 0)) < 0_i64, load(index, [pid_m*128 + i_1], mask=(pid_m*128 + i_1 < M && (K + 31)/32 > 0)) + 4096_i64, load(index, [pid_m*128 + i_1], mask=(pid_m*128 + i_1 < M && (K + 31)/32 > 0)))
  barrier()
  for k in pipelined(0, (K + 31)/32, stages=3) {
    copy (i_1_1: 128, j_1: 32) A_s[i_1_1, j_1] = load(x, [index_rows[i_1_1], i64(k*32 + j_1)], mask=(pid_m*128 + i_1_1 < M && k*32 + j_1 < K))
    copy (i_2: 32, j_2: 64) B_s[i_2, j_2] = load(y, [k*32 + i_2, pid_n*64 + j_2], mask=(k*32 + i_2 < K && pid_n*64 + j_2 < N))
    gemm(A_s, B_s, C_f)
  }
  for i_3 in parallel(0, 128) {
    for j_3 in parallel(0, 64) {
      C[pid_m*128 + i_3, pid_n*64 + j_3] = C_f[i_3, j_3], mask=(pid_m*128 + i_3 < M && pid_n*64 + j_3 < N)
    }
  }
}
)");
}

// The report says what left which loop and how far; a second run changes
// nothing (the same kernel body comes back).
TEST(Licm, ReportAndIdempotence) {
  tir::Kernel k = tir::parse_kernel(R"(kernel t(
  M: i32,
  N: i32,
  scale: global readonly f32[1],
  index: global readonly i64[M],
  out: global f32[M, N],
) grid(p: 1) {
  for m in serial(0, M) {
    for n in serial(0, N) {
      let s = scale[0]
      let r = index[m]
      check(r >= 0_i64, code=1, msg="negative {}", args=[r])
      out[m, n] = s*f32(r)
    }
  }
}
)");
  LicmReport report;
  tir::Kernel once = hoist_loop_invariants(k, &report);
  ASSERT_EQ(report.hoisted.size(), 3u);
  EXPECT_EQ(report.hoisted[0].kind, "let");
  EXPECT_EQ(report.hoisted[0].what, "s = scale[0]");
  EXPECT_EQ(report.hoisted[0].from_loop, "n");
  EXPECT_EQ(report.hoisted[0].to_loop, "m");
  EXPECT_EQ(report.hoisted[0].levels, 2);
  EXPECT_EQ(report.hoisted[1].what, "r = index[m]");
  EXPECT_EQ(report.hoisted[1].to_loop, "n");
  EXPECT_EQ(report.hoisted[1].levels, 1);
  EXPECT_EQ(report.hoisted[2].kind, "check");
  EXPECT_EQ(report.hoisted[2].from_loop, "n");
  EXPECT_EQ(report.hoisted[2].to_loop, "n");
  tir::Kernel twice = hoist_loop_invariants(once);
  EXPECT_TRUE(twice.body.same_as(once.body)) << tir::print(twice);
}

// Nothing to hoist: the very same body comes back.
TEST(Licm, UntouchedKernelIsReturnedAsIs) {
  tir::Kernel k = tir::parse_kernel(R"(kernel t(
  n: i32,
  x: global readonly f32[n],
  out: global f32[n],
) grid(p: 1) {
  for i in serial(0, n) {
    out[i] = x[i]
  }
}
)");
  EXPECT_TRUE(hoist_loop_invariants(k).body.same_as(k.body));
}

}  // namespace
}  // namespace tilefuse::passes

namespace tilefuse::passes {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The text of the block that starts at the line containing `head`.
std::string block_of(const std::string& text, const std::string& head) {
  size_t at = text.find(head);
  if (at == std::string::npos) return "";
  size_t line = text.rfind('\n', at) + 1;
  size_t indent = at - line;
  size_t end = text.find("\n" + std::string(indent, ' ') + "}\n", at);
  return text.substr(line, end == std::string::npos ? std::string::npos : end - line);
}

// The seed's fused GEMM as lower/ builds it (its golden file): after licm
// the K loop reads no index and checks nothing; the wrapped row index is
// materialized once before it and the bounds check runs once before it.
TEST(Licm, SeedFusedGemmGoldenLeavesKLoopIndexFree) {
  const std::string in =
      read_file(std::string(TILEFUSE_SOURCE_DIR) + "/tests/unit/lower/golden/seed_fused_gemm.tir");
  ASSERT_FALSE(in.empty());
  tir::Kernel k = tir::parse_kernel(in);
  LicmReport report;
  tir::Kernel out = hoist_loop_invariants(k, &report);
  tir::verify(out, "after licm");
  const std::string text = tir::print(out);
  const std::string k_loop = block_of(text, "for k in pipelined(");
  ASSERT_FALSE(k_loop.empty()) << text;
  EXPECT_EQ(k_loop.find("load(index,"), std::string::npos) << text;
  EXPECT_EQ(k_loop.find("index["), std::string::npos) << text;
  EXPECT_EQ(k_loop.find("check("), std::string::npos) << text;
  const std::string before = text.substr(0, text.find("for k in pipelined("));
  EXPECT_NE(before.find("check("), std::string::npos) << text;
  EXPECT_NE(before.find("copy (i"), std::string::npos) << text;
  bool check_reported = false;
  for (const LicmHoist& h : report.hoisted)
    check_reported |= h.kind == "check" && h.from_loop == "k";
  EXPECT_TRUE(check_reported);
  // What the K loop copies is then a plain f16 load at a materialized row:
  // 16-byte cp.async on sm_80 (row pitch 48 f16 = 96 bytes).
  CopyReport copies;
  decide_copies(out, *tir::Target::parse("sm_80"), {}, &copies);
  bool a_cp_async_16 = false;
  for (const CopyDecision& d : copies.copies)
    a_cp_async_16 |= d.dst == "A_s" && d.mode == "cp_async" && d.width == 16;
  EXPECT_TRUE(a_cp_async_16) << text;
  if (std::getenv("LICM_SHOW")) std::cout << text;
}

}  // namespace
}  // namespace tilefuse::passes

namespace tilefuse::passes {
namespace {

// A writable global may alias the output the loop writes: reading it stays
// in the loop; a read-only input never aliases and leaves.
TEST(Licm, WritableGlobalMayAliasWrittenOutput) {
  expect_licm(R"(kernel t(
  n: i32,
  scale: global readonly f32[4],
  bias: global f32[4],
  out: global f32[4, n],
) grid(p: 4) {
  for k in serial(0, n) {
    out[p, k] = bias[p] + scale[p]
  }
}
)",
              R"(kernel t(
  n: i32,
  scale: global readonly f32[4],
  bias: global f32[4],
  out: global f32[4, n],
) grid(p: 4) {
  let scale_v = load(scale, [p], mask=(n > 0))
  for k in serial(0, n) {
    out[p, k] = bias[p] + scale_v
  }
}
)");
}

// Under an outer (batch) loop the materialized rows are rewritten each
// iteration: a barrier first lets the last iteration's readers finish.
TEST(Licm, MaterializedRowsUnderOuterLoopWaitForReaders) {
  expect_licm(R"(kernel t(
  index: global readonly i64[2, 128],
  x: global readonly f16[2, 4096, 64] strides [262144, 64, 1] align 16,
) grid(pid_m: 1) {
  alloc A_s: shared f16[128, 32]
  for b in serial(0, 2) {
    for k in serial(0, 2) {
      copy (i: 128, j: 32) A_s[i, j] = load(x, [i64(b), index[b, i], i64(k*32 + j)])
    }
  }
}
)",
              R"(kernel t(
  index: global readonly i64[2, 128],
  x: global readonly f16[2, 4096, 64] strides [262144, 64, 1] align 16,
) grid(pid_m: 1) {
  alloc A_s: shared f16[128, 32]
  for b in serial(0, 2) {
    barrier()
    alloc index_rows: shared i64[128]
    copy (i: 128) index_rows[i] = index[b, i]
    barrier()
    for k in serial(0, 2) {
      copy (i_1: 128, j: 32) A_s[i_1, j] = x[i64(b), index_rows[i_1], i64(k*32 + j)]
    }
  }
}
)");
}

// With M a multiple of BLOCK_M simplify removes the row conjunct: the index
// load's only conjunct is the K tail, and nothing bounds pid_m*128 + i. The
// witness lane (k = 0, j = 0) read it, so it still leaves the K loop.
TEST(Licm, RowIndexWithOnlyKTailMaskLeavesKLoop) {
  expect_licm(R"(kernel t(
  K: i32,
  index: global readonly i64[2048],
  x: global readonly f16[4096, K] strides [K, 1] align 16,
) grid(pid_m: 16) {
  alloc A_s: shared f16[128, 32]
  for k in pipelined(0, (K + 31)/32, stages=2) {
    copy (i: 128, j: 32) A_s[i, j] = load(x, [load(index, [pid_m*128 + i], mask=(k*32 + j < K)), i64(k*32 + j)], mask=(k*32 + j < K))
  }
}
)",
              R"(kernel t(
  K: i32,
  index: global readonly i64[2048],
  x: global readonly f16[4096, K] strides [K, 1] align 16,
) grid(pid_m: 16) {
  alloc A_s: shared f16[128, 32]
  alloc index_rows: shared i64[128]
  copy (i: 128) index_rows[i] = load(index, [pid_m*128 + i], mask=(0 < K && (K + 31)/32 > 0))
  barrier()
  for k in pipelined(0, (K + 31)/32, stages=2) {
    copy (i_1: 128, j: 32) A_s[i_1, j] = load(x, [index_rows[i_1], i64(k*32 + j)], mask=(k*32 + j < K))
  }
}
)");
}

// The builder's lowered gather row loop (tir/test_kernels.h): the index
// load, its wrap and its check leave the j and k loops for the m loop.
TEST(Licm, BuilderGatherKernel) {
  tir::Kernel k = tir::testing::gather_kernel();
  LicmReport report;
  tir::Kernel out = hoist_loop_invariants(k, &report);
  tir::verify(out, "after licm");
  const std::string text = tir::print(out);
  const std::string k_loop = block_of(text, "for k in serial(");
  ASSERT_FALSE(k_loop.empty()) << text;
  EXPECT_EQ(k_loop.find("index["), std::string::npos) << text;
  EXPECT_EQ(k_loop.find("check("), std::string::npos) << text;
  EXPECT_EQ(k_loop.find("select("), std::string::npos) << text;
  const std::string m_loop = block_of(text, "for m in serial(");
  EXPECT_NE(m_loop.find("check("), std::string::npos) << text;
  int from_j = 0;
  for (const LicmHoist& h : report.hoisted) from_j += h.from_loop == "j" && h.to_loop == "k";
  EXPECT_GE(from_j, 3) << text;  // raw, row, the check (and exp(-0.5))
}

}  // namespace
}  // namespace tilefuse::passes

// ---- differential: licm changes no result and no error ----------------------

namespace tilefuse::passes {
namespace {

struct RunResult {
  std::vector<Tensor> outputs;
  std::optional<std::string> error;  // a failed check's message
};

// Runs every kernel of the plan, each through `pass` first.
RunResult run_plan(const Graph& g, PlanKind kind, const std::vector<Tensor>& params,
                   tir::Kernel (*pass)(const tir::Kernel&)) {
  RunResult r;
  std::map<ValueId, Tensor> memory;
  for (size_t i = 0; i < params.size(); ++i) memory[g.parameters()[i]] = params[i];
  runtime::ExecOptions eo;
  eo.num_threads = 1;
  for (const LoweredKernel& lk : lower_plan(g, build_plan(g, kind))) {
    tir::Kernel k = pass(lk.kernel);
    tir::verify(k, "differential", {.allow_hooks = false});
    const Node& out = g.node(lk.step.output);
    memory[lk.step.output] = Tensor::full(out.dtype, out.shape, is_floating(out.dtype) ? NAN : -77);
    std::vector<runtime::KernelArg> args;
    for (size_t i = 0; i < lk.bindings.size(); ++i)
      args.emplace_back(k.params[i].name(), memory.at(lk.bindings[i]));
    try {
      runtime::execute(k, args, eo);
    } catch (const UserError& e) {
      r.error = e.what();
      return r;
    }
  }
  for (ValueId o : g.outputs()) r.outputs.push_back(memory.at(o));
  return r;
}

tir::Kernel identity(const tir::Kernel& k) {
  return k;
}
tir::Kernel licm(const tir::Kernel& k) {
  return hoist_loop_invariants(k);
}

// Bit for bit the same outputs (NaN where NaN), or the same error.
void expect_same_behaviour(const Graph& g, const std::vector<Tensor>& inputs,
                           const std::string& what, bool expect_error = false) {
  for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
    SCOPED_TRACE(plan_kind_name(kind));
    RunResult a = run_plan(g, kind, inputs, identity);
    RunResult b;
    ASSERT_NO_THROW(b = run_plan(g, kind, inputs, licm)) << what << "\n" << g.to_string();
    ASSERT_EQ(a.error, b.error) << what << "\n" << g.to_string();
    EXPECT_EQ(a.error.has_value(), expect_error) << what << ": " << a.error.value_or("");
    ASSERT_EQ(a.outputs.size(), b.outputs.size());
    for (size_t i = 0; i < a.outputs.size(); ++i) {
      std::vector<double> x = a.outputs[i].to_vector(), y = b.outputs[i].to_vector();
      ASSERT_EQ(x.size(), y.size());
      for (size_t j = 0; j < x.size(); ++j)
        ASSERT_TRUE(x[j] == y[j] || (std::isnan(x[j]) && std::isnan(y[j])))
            << what << ": output " << i << " element " << j << ": " << x[j] << " vs " << y[j]
            << "\n"
            << g.to_string();
    }
  }
}

TEST(LicmDifferential, GatherProgramsKeepResultsAndErrors) {
  const char* programs[] = {
      "def f(x: f16[70, 45], y: f16[45, 33], index: i64[70]):\n    return x[index] @ y\n",
      // full row tiles and a K tail: the K-tail conjunct reads cse's let
      "def f(x: f16[128, 48], y: f16[48, 40], index: i64[128]):\n    return x[index] @ y\n",
      "def f(x: f32[9, 1], y: f32[1, 5], index: i32[9]):\n    return x[index] @ y\n",
      "def f(x: f16[40, 64], y: f16[50, 24], index: i64[64]):\n    return x @ y[index]\n",
  };
  for (const char* src : programs) {
    const Graph g = parse_program(src, "licm.tfs").graph;
    for (uint64_t seed : {1, 2}) expect_same_behaviour(g, make_random_inputs(g, seed), src);
    // An index out of range: the same check fails with the same message.
    std::vector<Tensor> bad = make_random_inputs(g, 3);
    for (size_t i = 0; i < bad.size(); ++i) {
      if (is_integral(bad[i].dtype())) {
        bad[i] = bad[i].contiguous(true);
        bad[i].set_linear(bad[i].numel() / 2, 1000);
      }
    }
    expect_same_behaviour(g, bad, std::string(src) + " (index out of range)", true);
  }
}

// Every shared case small enough to run twice here.
TEST(LicmDifferential, SharedCasesKeepResultsAndErrors) {
  int ran = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases")) {
    if (entry.path().extension() != ".tfs") continue;
    const std::string src = read_file(entry.path().string());
    const Graph g = parse_program(src, entry.path().filename().string()).graph;
    const std::vector<Tensor> inputs = make_random_inputs(g, 11);
    int64_t numel = 0;
    for (const Tensor& t : inputs) numel += t.numel();
    if (numel > (int64_t{1} << 21)) continue;
    const std::string name = entry.path().filename().string();
    expect_same_behaviour(g, inputs, name, name.find("out_of_range") != std::string::npos);
    ++ran;
  }
  EXPECT_GT(ran, 3);
}

}  // namespace
}  // namespace tilefuse::passes
