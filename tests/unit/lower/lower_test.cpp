// Lowering of plans to kernels: golden kernels (the seed's fused GEMM, the
// unfused plan, pointwise kernels), the shape of the GEMM template (hooks
// inside the K loop, nothing hoisted), and tir::verify on every kernel of
// both plans of every shared case, of GEMMs with degenerate shapes and of
// random programs.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "lower_test_util.h"
#include "common/random_program.h"

namespace tilefuse {
namespace {

using testing::block_of;
using testing::expect_golden;
using testing::parse;
using testing::print_plan_kernels;

constexpr const char* kSeedSmall =
    "def gather_mm(x: f16[64, 48], y: f16[48, 40], index: i64[64]):\n"
    "    return x[index] @ y\n";

TEST(GoldenLower, SeedFusedGemm) {
  const Program p = parse(kSeedSmall);
  const Plan plan = build_fused_plan(p.graph);
  ASSERT_EQ(plan.steps.size(), 1u);
  const std::vector<LoweredKernel> ks = lower_plan(p.graph, plan);
  ASSERT_EQ(ks.size(), 1u);
  const std::string text = tir::print(ks[0].kernel);
  expect_golden("seed_fused_gemm", text);
  // The template does not hoist: the index load, its wrap and its bounds
  // check sit inside the K loop (licm's job to move them).
  const std::string k_loop = block_of(text, "for k in pipelined(");
  ASSERT_FALSE(k_loop.empty()) << text;
  EXPECT_NE(k_loop.find("check("), std::string::npos) << k_loop;
  EXPECT_NE(k_loop.find("load(index, [pid_m*64 + i"), std::string::npos) << k_loop;
  EXPECT_NE(k_loop.find("< 0_i64, load(index"), std::string::npos) << "no wrap\n" << k_loop;
  EXPECT_NE(k_loop.find("+ 64_i64"), std::string::npos) << k_loop;
  const std::string before_loop = text.substr(0, text.find("for k in pipelined("));
  EXPECT_EQ(before_loop.find("index, ["), std::string::npos) << "hoisted by hand:\n" << text;
  // Bindings: x, y, index, then the output.
  ASSERT_EQ(ks[0].bindings.size(), 4u);
  EXPECT_EQ(ks[0].bindings.back(), p.graph.outputs()[0]);
  ASSERT_TRUE(ks[0].gemm_config.has_value());
  EXPECT_EQ(ks[0].gemm_config->block_k, 32);
}

TEST(GoldenLower, SeedUnfused) {
  const Program p = parse(kSeedSmall);
  expect_golden("seed_unfused", print_plan_kernels(p.graph, PlanKind::kUnfused));
}

TEST(GoldenLower, EpilogueAndBatched) {
  // Cast prologue, addmm bias and an activation epilogue; batched gather.
  const Program p = parse(
      "def f(x: f16[5, 7], w: f32[7, 3], b: f32[3], z: bf16[2, 6, 4], idx: i32[5] in [0, 6), "
      "v: bf16[2, 4, 3]):\n"
      "    return torch.relu(torch.addmm(b, x.float(), w, alpha=0.5)), torch.bmm(z[:, idx], v)\n");
  expect_golden("epilogue_batched_fused", print_plan_kernels(p.graph, PlanKind::kFused));
}

// Split-K (GemmConfig::split_k 3, K = 100 in 16-wide tiles: 7 K tiles, 3
// a split, the last split with one): the K loop over a split's tiles from
// pid_k * 3, the partial tile stored to the workspace at [pid_k, tile],
// then if_last_arrival on the tile's counter, whose body sums the three
// partials in split order into the accumulator (its own from the
// accumulator, the others read back; a nest of its own, so that the loads
// do not wait on the epilogue's stores) and runs the epilogue (bias, relu)
// once on the sums.
TEST(GoldenLower, SplitK) {
  const Program p = parse(
      "def f(x: f16[40, 100], w: f16[100, 24], b: f16[24]):\n"
      "    return torch.relu(x @ w + b)\n");
  LowerOptions o;
  o.gemm_config = GemmConfig{32, 16, 16, 2, 4, 8, 3};
  const std::vector<LoweredKernel> ks = lower_plan(p.graph, build_fused_plan(p.graph), o);
  ASSERT_EQ(ks.size(), 1u);
  const std::string text = tir::print(ks[0].kernel);
  expect_golden("split_k_fused", text);
  EXPECT_NE(text.find("for k in pipelined(0, 3, stages=2)"), std::string::npos) << text;
  const std::string fixup = block_of(text, "if_last_arrival(splitk_counters[tile], 3)");
  ASSERT_FALSE(fixup.empty()) << text;
  EXPECT_NE(fixup.find("C_f[i_3, j_3] = select(pid_k == 0, C_f[i_3, j_3], "
                       "load(splitk_workspace, [0, tile, i_3, j_3], mask=(pid_k != 0))) + "),
            std::string::npos)
      << fixup;
  EXPECT_NE(fixup.find("load(splitk_workspace, [2, tile, i_3, j_3], mask=(pid_k != 2))"),
            std::string::npos)
      << fixup;
  // The epilogue reads only the sums (no workspace load past the sum's nest).
  const std::string epilogue = fixup.substr(fixup.find("for i_4"));
  EXPECT_EQ(epilogue.find("splitk_workspace"), std::string::npos) << fixup;
  EXPECT_NE(epilogue.find("C_f[i_4, j_4]"), std::string::npos) << fixup;
  // One store of the output, inside the fixup only.
  EXPECT_NE(fixup.find("load(b,"), std::string::npos) << fixup;
  EXPECT_EQ(text.find("load(b,"), text.find(fixup) + fixup.find("load(b,")) << text;
  // The workspace and the counters follow the output; the runtime sizes them.
  ASSERT_EQ(ks[0].scratch.size(), 2u);
  EXPECT_EQ(ks[0].scratch[0].shape, (Shape{3, 4, 32, 16}));
  EXPECT_EQ(ks[0].scratch[0].dtype, DType::F32);
  EXPECT_FALSE(ks[0].scratch[0].zeroed);
  EXPECT_EQ(ks[0].scratch[1].shape, (Shape{4}));
  EXPECT_TRUE(ks[0].scratch[1].zeroed);
  EXPECT_EQ(ks[0].kernel.params.size(), ks[0].bindings.size() + 2);
}

TEST(GoldenLower, Pointwise) {
  // 2-D tiles (last dim >= 32), then 1-D blocks with a gather and a view.
  const Program p = parse(
      "def f(x: f16[3, 40], s: f32[40], t: i32[6], i: i64[4] in [-6, 6)):\n"
      "    return torch.gelu(x) * s + 0.1, t[i].T.float() / 3\n");
  expect_golden("pointwise", print_plan_kernels(p.graph, PlanKind::kFused));
}

// Every kernel must pass the verifier with no hooks left.
void expect_plans_verify(const Graph& g, const std::string& what) {
  for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
    const Plan plan = build_plan(g, kind);
    std::vector<LoweredKernel> ks;
    ASSERT_NO_THROW(ks = lower_plan(g, plan)) << what << " (" << plan_kind_name(kind) << ")\n"
                                              << g.to_string() << to_string(g, plan);
    ASSERT_EQ(ks.size(), plan.steps.size());
    for (const LoweredKernel& lk : ks) {
      tir::VerifyOptions vo;
      vo.allow_hooks = false;
      const std::vector<std::string> errors = tir::verify_errors(lk.kernel, vo);
      EXPECT_TRUE(errors.empty()) << what << ": " << errors.front() << "\n" << lk.kernel;
      EXPECT_EQ(lk.bindings.size(), lk.kernel.params.size());
      EXPECT_EQ(lk.bindings.back(), lk.step.output);
    }
  }
}

TEST(LowerVerify, SharedCases) {
  int cases = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases")) {
    if (entry.path().extension() != ".tfs") continue;
    const Program p = load_program(entry.path().string());
    expect_plans_verify(p.graph, entry.path().filename().string());
    ++cases;
  }
  EXPECT_GE(cases, 10);
}

TEST(LowerVerify, RandomPrograms) {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const Graph g = testing::RandomProgram(seed).build();
    expect_plans_verify(g, "seed " + std::to_string(seed));
  }
}

TEST(LowerVerify, DegenerateGemmShapes) {
  for (int64_t m : {0, 1, 3, 130})
    for (int64_t n : {0, 1, 17})
      for (int64_t k : {0, 1, 33}) {
        const std::string shapes = std::to_string(m) + ", " + std::to_string(k) + "], w: f32[" +
                                   std::to_string(k) + ", " + std::to_string(n) + "]";
        const Program p = parse("def f(x: f32[" + shapes + "):\n    return x @ w\n");
        expect_plans_verify(p.graph, shapes);
      }
  // Vector operands and broadcast batch dims.
  for (const char* src : {
           "def f(x: f16[7], w: f16[7, 5]):\n    return x @ w\n",
           "def f(x: f16[4, 7], w: f16[7]):\n    return x @ w\n",
           "def f(x: f16[7], w: f16[3, 7, 5]):\n    return torch.relu(x @ w)\n",
           "def f(x: f32[2, 1, 4, 7], w: f32[3, 7, 5]):\n    return x @ w\n",
           "def f(x: f32[2, 4, 7], w: f32[7, 5]):\n    return (x @ w).T\n",
       }) {
    const Program p = parse(src);
    expect_plans_verify(p.graph, src);
  }
}

TEST(LowerGemm, TemplateShape) {
  const Program p = parse("def f(x: f16[300, 70], w: f16[70, 200]):\n    return x @ w\n");
  const Plan plan = build_fused_plan(p.graph);
  GemmConfig c;
  c.block_m = 64;
  c.block_n = 32;
  c.block_k = 16;
  c.num_stages = 4;
  c.group_m = 4;
  LowerOptions opts;
  opts.gemm_config = c;
  const std::vector<LoweredKernel> ks = lower_plan(p.graph, plan, opts);
  ASSERT_EQ(ks.size(), 1u);
  const std::string text = tir::print(ks[0].kernel);
  // 5 x 7 tiles, K in 5 steps of 16 with a masked tail, group-M of 4.
  EXPECT_NE(text.find("grid(pid: 35)"), std::string::npos) << text;
  EXPECT_NE(text.find("for k in pipelined(0, 5, stages=4)"), std::string::npos) << text;
  EXPECT_NE(text.find("k*16 + j < 70"), std::string::npos) << text;
  EXPECT_NE(text.find("let group_id = pid/28"), std::string::npos) << text;
  EXPECT_NE(text.find("gemm(A_s, B_s, C_f)"), std::string::npos) << text;
  EXPECT_NE(text.find("mask=(m < 300 && n < 200)"), std::string::npos) << text;
}

TEST(LowerGemm, DefaultConfigFitsTheProblem) {
  const Program p = parse("def f(x: f32[5, 3], w: f32[3, 1000]):\n    return x @ w\n");
  const Plan plan = build_fused_plan(p.graph);
  const GemmConfig c = default_gemm_config(p.graph, plan.steps[0]);
  EXPECT_EQ(c.block_m, 16);
  EXPECT_EQ(c.block_n, 128);
  EXPECT_EQ(c.block_k, 16);
  EXPECT_EQ(c.num_stages, 1);
  EXPECT_TRUE(can_use_gemm(p.graph, plan.steps[0]));
}

}  // namespace
}  // namespace tilefuse
