// The host pieces of the check of indices no kernel reads: the condition
// shared by the CPU executor and the GPU's device-side check
// (driver::indices_may_go_unread), and the error the GPU's report is worded
// into (throw_gather_index_error: the CPU executor's, from a value and a
// linear position).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "driver/execute.h"
#include "driver/specialize.h"
#include "frontend/frontend.h"
#include "reference/eval.h"
#include "runtime/cuda/nvrtc.h"

namespace tilefuse {
namespace {

bool may_go_unread(const std::string& source, const std::map<std::string, int64_t>& sizes = {}) {
  const Program p = parse_program(source, "u.tfs");
  const Graph& g = p.graph;
  driver::Binding b;
  for (const auto& s : g.symbols()) b.push_back(sizes.at(s.name));
  return driver::indices_may_go_unread(g, b);
}

TEST(UnreadIndices, TheCondition) {
  // Every gathered row is read.
  EXPECT_FALSE(
      may_go_unread("def g(x: f32[5, 4], w: f32[4, 3], i: i64[2]):\n    return x[i] @ w\n"));
  EXPECT_FALSE(may_go_unread("def g(x: f32[5, 4], i: i64[2, 3]):\n    return x[i] * 2.0\n"));
  // No gather: nothing to check, whatever is empty or sliced.
  EXPECT_FALSE(may_go_unread("def e(x: f32[5, 0], w: f32[0, 3]):\n    return x @ w\n"));
  EXPECT_FALSE(may_go_unread("def s(x: f32[5, 4]):\n    return x[0:2] * 2.0\n"));
  // K = 0, N = 0, a select or slice of a gather, a gather of a gather.
  EXPECT_TRUE(
      may_go_unread("def k0(x: f32[5, 0], w: f32[0, 3], i: i64[2]):\n    return x[i] @ w\n"));
  EXPECT_TRUE(
      may_go_unread("def n0(x: f32[5, 4], w: f32[4, 0], i: i64[2]):\n    return x[i] @ w\n"));
  EXPECT_TRUE(
      may_go_unread("def s0(x: f32[5, 4], w: f32[4, 3], i: i64[2]):\n    return x[i][0] @ w\n"));
  EXPECT_TRUE(may_go_unread("def s1(x: f32[5, 4], i: i64[2]):\n    return x[i][0:1] * 2.0\n"));
  EXPECT_TRUE(
      may_go_unread("def gg(x: f32[5, 4], i: i64[3], j: i64[2]):\n    return x[i][j] * 2.0\n"));
  // A gather no output depends on (a dead statement): PyTorch eager still
  // runs it, and raises on a bad index.
  EXPECT_TRUE(may_go_unread(
      "def d(x: f32[5, 4], i: i64[2]):\n    b = x[i]\n    return x * 2.0\n"));
  EXPECT_TRUE(may_go_unread(
      "def d2(x: f32[5, 4], w: f32[4, 3], i: i64[2]):\n    b = torch.relu(x[i] @ w)\n"
      "    return x @ w\n"));
  // Symbolic dims: decided at the binding.
  const char* sym = "def sym(x: f32[5, K], w: f32[K, 3], i: i64[M]):\n    return x[i] @ w\n";
  EXPECT_FALSE(may_go_unread(sym, {{"K", 4}, {"M", 3}}));
  EXPECT_TRUE(may_go_unread(sym, {{"K", 0}, {"M", 3}}));
  EXPECT_TRUE(may_go_unread(sym, {{"K", 4}, {"M", 0}}));
}

// The error check_gather_indices throws for `idx` at `gather`.
UserError cpu_error(const Graph& g, ValueId gather, int64_t size, const Tensor& idx) {
  try {
    check_gather_indices(g, gather, size, idx);
  } catch (const UserError& e) {
    return e;
  }
  ADD_FAILURE() << "check_gather_indices raised nothing";
  return UserError("");
}

UserError rebuilt_error(const Graph& g, ValueId gather, int64_t size, const Shape& shape,
                        int64_t position, int64_t value) {
  try {
    throw_gather_index_error(g, gather, size, shape, position, value);
  } catch (const UserError& e) {
    return e;
  }
  return UserError("");
}

std::vector<ValueId> gathers(const Graph& g) {
  std::vector<ValueId> out;
  for (ValueId v = 0; v < g.size(); ++v)
    if (g.node(v).kind == OpKind::Index) out.push_back(v);
  return out;
}

void expect_same(const UserError& a, const UserError& b) {
  EXPECT_EQ(std::string(a.what()), std::string(b.what()));
  EXPECT_EQ(a.kind(), b.kind());
  EXPECT_EQ(a.loc().line, b.loc().line);
  EXPECT_EQ(a.loc().col, b.loc().col);
}

// The GPU reports a value and a row-major position; the host's words are
// the CPU executor's: a 1-D, a 2-D (position decoded in its dims) and a 0-dim
// index, index_select's note, a symbolic size named by its symbol.
TEST(UnreadIndices, TheReportedErrorIsTheCpuExecutors) {
  {
    const Program p =
        parse_program("def s1(x: f32[5, 4], i: i64[4]):\n    return x[i][0:1] * 2.0\n", "u.tfs");
    Tensor idx = Tensor::empty(DType::I64, {4});
    for (int64_t k = 0; k < 4; ++k) idx.set_linear(k, k == 2 ? -6 : 1);
    const ValueId g0 = gathers(p.graph).at(0);
    const UserError cpu = cpu_error(p.graph, g0, 5, idx);
    EXPECT_EQ(std::string(cpu.what()),
              "index -6 is out of bounds for dim 0 of `x` (size 5): `i`[2] = -6");
    expect_same(rebuilt_error(p.graph, g0, 5, {4}, 2, -6), cpu);
  }
  {
    const Program p = parse_program(
        "def s2(x: f32[5, 4], w: f32[4, 3], i: i32[2, 3]):\n    return x[i][0] @ w\n", "u.tfs");
    Tensor idx = Tensor::empty(DType::I32, {2, 3});
    for (int64_t k = 0; k < 6; ++k) idx.set_linear(k, k == 5 ? 9 : 0);
    const ValueId g0 = gathers(p.graph).at(0);
    const UserError cpu = cpu_error(p.graph, g0, 5, idx);
    EXPECT_EQ(std::string(cpu.what()),
              "index 9 is out of bounds for dim 0 of `x` (size 5): `i`[1, 2] = 9");
    expect_same(rebuilt_error(p.graph, g0, 5, {2, 3}, 5, 9), cpu);
  }
  {
    const Program p = parse_program(
        "def sel(x: f32[5, 4], i: i64[2]):\n    return torch.index_select(x, 0, i)[0:1] * 2.0\n",
        "u.tfs");
    Tensor idx = Tensor::empty(DType::I64, {2});
    idx.set_linear(0, 0);
    idx.set_linear(1, -1);
    const ValueId g0 = gathers(p.graph).at(0);
    const UserError cpu = cpu_error(p.graph, g0, 5, idx);
    EXPECT_NE(std::string(cpu.what()).find(Graph::kNoWrapNote), std::string::npos) << cpu.what();
    expect_same(rebuilt_error(p.graph, g0, 5, {2}, 1, -1), cpu);
  }
  {
    const Program p =
        parse_program("def sym(x: f32[T, 4], i: i64[2, 2]):\n    return x[i][0] * 2.0\n", "u.tfs");
    Tensor idx = Tensor::empty(DType::I64, {2, 2});
    for (int64_t k = 0; k < 4; ++k) idx.set_linear(k, k == 3 ? 7 : 0);
    const ValueId g0 = gathers(p.graph).at(0);
    const UserError cpu = cpu_error(p.graph, g0, 6, idx);
    EXPECT_NE(std::string(cpu.what()).find("(size T)"), std::string::npos) << cpu.what();
    expect_same(rebuilt_error(p.graph, g0, 6, {2, 2}, 3, 7), cpu);
  }
}

// The same error as the CPU executor's own run (check_unread_indices).
TEST(UnreadIndices, TheReportedErrorIsTheExecutorsRun) {
  const Program p = parse_program(
      "def k0(x: f32[5, 0], w: f32[0, 3], i: i64[2, 2]):\n    return x[i] @ w\n", "u.tfs");
  Tensor idx = Tensor::empty(DType::I64, {2, 2});
  for (int64_t k = 0; k < 4; ++k) idx.set_linear(k, k == 2 ? 5 : -5);
  const driver::CompiledProgram cp = driver::compile(p.graph, {});
  try {
    driver::execute(cp,
                    {Tensor::empty(DType::F32, {5, 0}), Tensor::empty(DType::F32, {0, 3}), idx});
    ADD_FAILURE() << "the executor raised nothing";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "index 5 is out of bounds for dim 0 of `x` (size 5): `i`[1, 0] = 5");
    expect_same(rebuilt_error(p.graph, gathers(p.graph).at(0), 5, {2, 2}, 2, 5), e);
  }
}

// A dead gather (`b = x[i]`, nothing returns b) with an index out of range:
// the reference evaluator raises at the subscript, as PyTorch eager does;
// the executor, which runs no kernel for b, must raise the same error and
// not return the live output as if the program were fine.
TEST(UnreadIndices, ADeadGathersIndexIsCheckedLikeTheReference) {
  const Program p = parse_program(
      "def d(x: f32[5, 4], w: f32[4, 3], i: i64[6]):\n    b = torch.relu(x[i] @ w)\n"
      "    return x @ w\n",
      "u.tfs");
  Tensor x = Tensor::empty(DType::F32, {5, 4}), w = Tensor::empty(DType::F32, {4, 3});
  for (int64_t k = 0; k < 20; ++k) x.set_linear(k, 0.25 * static_cast<double>(k % 7) - 0.5);
  for (int64_t k = 0; k < 12; ++k) w.set_linear(k, 0.5 - 0.125 * static_cast<double>(k % 5));
  Tensor idx = Tensor::empty(DType::I64, {6});
  for (int64_t k = 0; k < 6; ++k) idx.set_linear(k, k == 4 ? -6 : k % 5);
  std::string reference_error;
  try {
    evaluate(p.graph, {x, w, idx});
    ADD_FAILURE() << "the reference raised nothing";
  } catch (const UserError& e) {
    reference_error = e.what();
  }
  EXPECT_EQ(reference_error, "index -6 is out of bounds for dim 0 of `x` (size 5): `i`[4] = -6");
  for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
    driver::CompileOptions co;
    co.plan = plan;
    const driver::CompiledProgram cp = driver::compile(p.graph, co);
    try {
      driver::execute(cp, {x, w, idx});
      ADD_FAILURE() << plan_kind_name(plan) << ": the executor raised nothing";
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), reference_error) << plan_kind_name(plan);
      EXPECT_EQ(e.loc().line, 2);
      EXPECT_EQ(e.loc().col, 22);
    }
  }
  // With every index in range the live output is the reference's.
  idx.set_linear(4, -5);
  const std::vector<Tensor> want = evaluate(p.graph, {x, w, idx});
  const std::vector<Tensor> got = driver::execute(driver::compile(p.graph, {}), {x, w, idx});
  ASSERT_EQ(got.size(), 1u);
  for (int64_t k = 0; k < 15; ++k) EXPECT_EQ(got[0].get_linear(k), want[0].get_linear(k)) << k;
}

// The GPU's check kernels compile with NVRTC for both target families (no
// GPU needed; skipped without NVRTC), one entry per index dtype; so do the
// view copies in the same module.
TEST(UnreadIndices, TheCheckKernelsCompile) {
  std::string why;
  if (!cuda::load_nvrtc(&why)) GTEST_SKIP() << "NVRTC unavailable: " << why;
  for (const char* arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    const cuda::CompiledKernel k = cuda::compile_cuda(
        driver::index_check_source(), "tf_check_indices", driver::cuda_compile_options(arch));
    EXPECT_FALSE(k.cubin.empty());
    std::vector<std::string> entries;
    for (const cuda::PtxasUsage& u : k.all_usage) {
      entries.push_back(u.function);
      EXPECT_EQ(u.spill_store_bytes, 0) << u.function;
    }
    EXPECT_NE(std::find(entries.begin(), entries.end(), "tf_check_indices_i32"), entries.end())
        << k.log;
    EXPECT_NE(std::find(entries.begin(), entries.end(), "tf_check_indices_i64"), entries.end())
        << k.log;
    // The copy of a strided parameter returned as is, one entry per element size.
    for (const char* copy :
         {"tf_copy_view_1", "tf_copy_view_2", "tf_copy_view_4", "tf_copy_view_8"})
      EXPECT_NE(std::find(entries.begin(), entries.end(), copy), entries.end()) << copy << k.log;
  }
}

}  // namespace
}  // namespace tilefuse
