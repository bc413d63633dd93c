// axis_info: text in -> print_axis_info -> lines out.
#include <gtest/gtest.h>

#include <sstream>

#include "analysis/axis_info.h"
#include "tir/builder.h"
#include "tir/parser.h"
#include "tir/verifier.h"

namespace tilefuse::analysis {
namespace {

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

void expect_axis_info(const std::string& in, const std::string& expected) {
  tir::Kernel k = tir::parse_kernel(in);
  tir::verify(k, "axis_info test input");
  std::string got = print_axis_info(k);
  std::vector<std::string> g = lines(got), e = lines(expected);
  EXPECT_EQ(g, e) << "input:\n" << in << "\noutput:\n" << got << "\nexpected:\n" << expected;
}

}  // namespace

// A copy var is an arange along its dim (one run from 0) and a broadcast
// constant of unknown value along the others.
TEST(AxisInfo, ArangeAndBroadcast) {
  expect_axis_info(R"(kernel t(
  out: global i32[4, 8],
) grid(p: 2) {
  alloc t_s: shared i32[4, 8]
  copy (i: 4, j: 8) t_s[i, j] = i*8 + j
}
)",
                   R"(copy t_s (i: 4, j: 8)
  i: contiguity=[4, 1] divisibility=[max, 1] constancy=[1, 8]
  i*8: contiguity=[1, 1] divisibility=[max, 8] constancy=[1, 8]
  j: contiguity=[1, 8] divisibility=[1, max] constancy=[4, 1]
  i*8 + j: contiguity=[1, 8] divisibility=[1, 8] constancy=[1, 1]
)");
}

// + keeps runs against constants; * by a constant scales divisibility; //
// by 8 of a 64-aligned run is constant on runs of 8; % 16 of a run starting
// at 4 mod 16 stays contiguous on runs of 4.
TEST(AxisInfo, AddMulFloorDivMod) {
  expect_axis_info(R"(kernel t(
) grid(p: 2) {
  alloc t_s: shared i32[4, 32]
  copy (i: 4, j: 32) t_s[i, j] = (p*64 + j)/8 + (j + 4)%16*3
}
)",
                   R"(copy t_s (i: 4, j: 32)
  p: contiguity=[1, 1] divisibility=[1, 1] constancy=[4, 32]
  p*64: contiguity=[1, 1] divisibility=[64, 64] constancy=[4, 32]
  j: contiguity=[1, 32] divisibility=[1, max] constancy=[4, 1]
  p*64 + j: contiguity=[1, 32] divisibility=[1, 64] constancy=[4, 1]
  (p*64 + j)/8: contiguity=[1, 1] divisibility=[1, 8] constancy=[4, 8]
  j + 4: contiguity=[1, 32] divisibility=[1, 4] constancy=[4, 1]
  (j + 4)%16: contiguity=[1, 4] divisibility=[1, 4] constancy=[4, 1]
  (j + 4)%16*3: contiguity=[1, 1] divisibility=[1, 4] constancy=[4, 1]
  (p*64 + j)/8 + (j + 4)%16*3: contiguity=[1, 1] divisibility=[1, 4] constancy=[4, 1]
)");
}

// The condition j < 16 is constant on runs of 16, both branches are
// contiguous: the select is contiguous on runs of 16.
TEST(AxisInfo, Select) {
  expect_axis_info(R"(kernel t(
) grid(p: 2) {
  alloc t_s: shared i32[4, 32]
  copy (i: 4, j: 32) t_s[i, j] = select(j < 16, j + p*32, j + 64)
}
)",
                   R"(copy t_s (i: 4, j: 32)
  j: contiguity=[1, 32] divisibility=[1, max] constancy=[4, 1]
  p: contiguity=[1, 1] divisibility=[1, 1] constancy=[4, 32]
  p*32: contiguity=[1, 1] divisibility=[32, 32] constancy=[4, 32]
  j + p*32: contiguity=[1, 32] divisibility=[1, 32] constancy=[4, 1]
  j + 64: contiguity=[1, 32] divisibility=[1, 64] constancy=[4, 1]
  select(j < 16, j + p*32, j + 64): contiguity=[1, 16] divisibility=[1, 32] constancy=[4, 1]
)");
}

// A loaded value is unknown but constant along j (its index does not use
// j), so idx[...]*32 + j is contiguous along j with divisibility 32.
TEST(AxisInfo, LoadedValue) {
  expect_axis_info(R"(kernel t(
  idx: global readonly i32[64],
) grid(p: 2) {
  alloc t_s: shared i32[4, 32]
  copy (i: 4, j: 32) t_s[i, j] = idx[p*4 + i]*32 + j
}
)",
                   R"(copy t_s (i: 4, j: 32)
  p: contiguity=[1, 1] divisibility=[1, 1] constancy=[4, 32]
  p*4: contiguity=[1, 1] divisibility=[4, 4] constancy=[4, 32]
  i: contiguity=[4, 1] divisibility=[max, 1] constancy=[1, 32]
  p*4 + i: contiguity=[4, 1] divisibility=[4, 1] constancy=[1, 32]
  address idx[p*4 + i]: offset i64(p*4 + i) contiguity=[4, 1] divisibility=[4, 1] bytes=[4, 4] mask_constancy=[4, 32]
  idx[p*4 + i]: contiguity=[1, 1] divisibility=[1, 1] constancy=[1, 32]
  idx[p*4 + i]*32: contiguity=[1, 1] divisibility=[32, 32] constancy=[1, 32]
  j: contiguity=[1, 32] divisibility=[1, max] constancy=[4, 1]
  idx[p*4 + i]*32 + j: contiguity=[1, 32] divisibility=[1, 32] constancy=[1, 1]
)");
}

// The gathered address index[m]*2048 + k: contiguous along j, divisible by
// 32 elements, so 16-byte aligned for f16 with a 16-byte base; the mask
// m < M is constant on runs of 16 rows from M's declared divisibility.
TEST(AxisInfo, GatherK2048) {
  expect_axis_info(R"(kernel t(
  M: i32,
  index: global readonly i64[M],
  x: global readonly f16[4096, 2048] strides [2048, 1] align 16,
) grid(pid: (M + 127)/128) attrs(M_divisibility = 16) {
  alloc A_s: shared f16[128, 32]
  for k in serial(0, 64) {
    copy (i: 128, j: 32) A_s[i, j] = load(x, [index[pid*128 + i], i64(k*32 + j)], mask=(pid*128 + i < M))
  }
}
)",
                   R"(copy A_s (i: 128, j: 32)
  pid: contiguity=[1, 1] divisibility=[1, 1] constancy=[128, 32]
  pid*128: contiguity=[1, 1] divisibility=[128, 128] constancy=[128, 32]
  i: contiguity=[128, 1] divisibility=[max, 1] constancy=[1, 32]
  pid*128 + i: contiguity=[128, 1] divisibility=[128, 1] constancy=[1, 32]
  address index[pid*128 + i]: offset i64(pid*128 + i) contiguity=[128, 1] divisibility=[128, 1] bytes=[8, 8] mask_constancy=[128, 32]
  index[pid*128 + i]: contiguity=[1, 1] divisibility=[1, 1] constancy=[1, 32]
  k: contiguity=[1, 1] divisibility=[1, 1] constancy=[128, 32]
  k*32: contiguity=[1, 1] divisibility=[32, 32] constancy=[128, 32]
  j: contiguity=[1, 32] divisibility=[1, max] constancy=[128, 1]
  k*32 + j: contiguity=[1, 32] divisibility=[1, 32] constancy=[128, 1]
  i64(k*32 + j): contiguity=[1, 32] divisibility=[1, 32] constancy=[128, 1]
  M: contiguity=[1, 1] divisibility=[16, 16] constancy=[128, 32]
  address load(x, [index[pid*128 + i], i64(k*32 + j)], mask=(pid*128 + i < M)): offset index[pid*128 + i]*2048_i64 + i64(k*32 + j) contiguity=[1, 32] divisibility=[1, 32] bytes=[2, 16] mask_constancy=[16, 32]
)");
}

// The same gather with K = 1001: the row start index[m]*1001 is only
// element (2-byte) aligned, and the K-tail mask may change at any j.
TEST(AxisInfo, GatherK1001) {
  expect_axis_info(R"(kernel t(
  M: i32,
  index: global readonly i64[M],
  x: global readonly f16[4096, 1001] strides [1001, 1] align 16,
) grid(pid: (M + 127)/128) {
  alloc A_s: shared f16[128, 32]
  for k in serial(0, 32) {
    copy (i: 128, j: 32) A_s[i, j] = load(x, [index[pid*128 + i], i64(k*32 + j)], mask=(pid*128 + i < M && k*32 + j < 1001))
  }
}
)",
                   R"(copy A_s (i: 128, j: 32)
  pid: contiguity=[1, 1] divisibility=[1, 1] constancy=[128, 32]
  pid*128: contiguity=[1, 1] divisibility=[128, 128] constancy=[128, 32]
  i: contiguity=[128, 1] divisibility=[max, 1] constancy=[1, 32]
  pid*128 + i: contiguity=[128, 1] divisibility=[128, 1] constancy=[1, 32]
  address index[pid*128 + i]: offset i64(pid*128 + i) contiguity=[128, 1] divisibility=[128, 1] bytes=[8, 8] mask_constancy=[128, 32]
  index[pid*128 + i]: contiguity=[1, 1] divisibility=[1, 1] constancy=[1, 32]
  k: contiguity=[1, 1] divisibility=[1, 1] constancy=[128, 32]
  k*32: contiguity=[1, 1] divisibility=[32, 32] constancy=[128, 32]
  j: contiguity=[1, 32] divisibility=[1, max] constancy=[128, 1]
  k*32 + j: contiguity=[1, 32] divisibility=[1, 32] constancy=[128, 1]
  i64(k*32 + j): contiguity=[1, 32] divisibility=[1, 32] constancy=[128, 1]
  M: contiguity=[1, 1] divisibility=[1, 1] constancy=[128, 32]
  address load(x, [index[pid*128 + i], i64(k*32 + j)], mask=(pid*128 + i < M && k*32 + j < 1001)): offset index[pid*128 + i]*1001_i64 + i64(k*32 + j) contiguity=[1, 32] divisibility=[1, 1] bytes=[2, 2] mask_constancy=[1, 1]
)");
}

// A param with a declared divisibility: k*32 + i < K is constant on runs
// of 16 rows; 64 f32 columns are contiguous and 16-byte aligned.
TEST(AxisInfo, ParamDivisibility) {
  expect_axis_info(R"(kernel t(
  K: i32,
  y: global readonly f32[K, 64] strides [64, 1] align 16,
) grid(p: 2) attrs(K_divisibility = 16) {
  alloc B_s: shared f32[32, 64]
  for k in serial(0, (K + 31)/32) {
    copy (i: 32, j: 64) B_s[i, j] = load(y, [k*32 + i, j], mask=(k*32 + i < K))
  }
}
)",
                   R"(copy B_s (i: 32, j: 64)
  k: contiguity=[1, 1] divisibility=[1, 1] constancy=[32, 64]
  k*32: contiguity=[1, 1] divisibility=[32, 32] constancy=[32, 64]
  i: contiguity=[32, 1] divisibility=[max, 1] constancy=[1, 64]
  k*32 + i: contiguity=[32, 1] divisibility=[32, 1] constancy=[1, 64]
  j: contiguity=[1, 64] divisibility=[1, max] constancy=[32, 1]
  K: contiguity=[1, 1] divisibility=[16, 16] constancy=[32, 64]
  address load(y, [k*32 + i, j], mask=(k*32 + i < K)): offset i64(k*32 + i)*64_i64 + i64(j) contiguity=[1, 64] divisibility=[1, 64] bytes=[4, 16] mask_constancy=[16, 64]
)");
}

// An epilogue's nest of parallel loops is a region: the store address
// pid_n*64 + j (through a let) is contiguous along j, 16-byte aligned for f32.
TEST(AxisInfo, ParallelNestStore) {
  expect_axis_info(R"(kernel t(
  C: global f32[256, 2048] strides [2048, 1] align 16,
) grid(pid_m: 2, pid_n: 32) {
  for i in parallel(0, 128) {
    for j in parallel(0, 64) {
      let n = pid_n*64 + j
      C[pid_m*128 + i, n] = 0.0, mask=(n < 2048)
    }
  }
}
)",
                   R"(parallel (i: 128, j: 64)
  pid_m: contiguity=[1, 1] divisibility=[1, 1] constancy=[128, 64]
  pid_m*128: contiguity=[1, 1] divisibility=[128, 128] constancy=[128, 64]
  i: contiguity=[128, 1] divisibility=[max, 1] constancy=[1, 64]
  pid_m*128 + i: contiguity=[128, 1] divisibility=[128, 1] constancy=[1, 64]
  n: contiguity=[1, 64] divisibility=[1, 64] constancy=[128, 1]
  store C[...]: offset i64(pid_m*128 + i)*2048_i64 + i64(n) contiguity=[1, 64] divisibility=[1, 64] bytes=[4, 16] mask_constancy=[128, 64]
)");
}

namespace {

// The facts API directly: the byte divisibility of the gathered f16 address
// follows K (2048 -> 16 bytes, 1001 -> 2 bytes) and the base alignment.
TEST(AxisInfo, AccessBytesFollowKAndBase) {
  for (int64_t K : {2048, 1001, 1000}) {
    for (int align : {16, 4}) {
      tir::Var i("i"), j("j"), pid("pid");
      tir::Buffer index = tir::BufferNode::make("index", DType::I64, tir::MemScope::Global, {64});
      tir::Buffer x = tir::BufferNode::make("x", DType::F16, tir::MemScope::Global,
                                            {4096, tir::make_int(DType::I64, K)}, {}, true, align);
      tir::Expr row = tir::LoadNode::make(index, {tir::MulNode::make(pid, 64) + 0});
      tir::Expr v = tir::LoadNode::make(x, {row, tir::CastNode::make(DType::I64, j)});
      tir::Kernel k;
      AxisInfo info(k, {i, j}, {64, 32});
      AccessFacts a = info.access(v.as<tir::LoadNode>());
      int64_t expect = std::min<int64_t>(align, (K & -K) * 2);
      EXPECT_EQ(a.byte_divisibility[1], std::min<int64_t>(expect, 16)) << K << " " << align;
      EXPECT_EQ(a.offset_facts.contiguity[1], 32);
      EXPECT_EQ(a.offset_facts.constancy[0], 64);
    }
  }
}

}  // namespace

}  // namespace tilefuse::analysis
