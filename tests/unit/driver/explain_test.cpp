// The explain account: every key README.md documents is there with its
// type, the fused ops and copies name the right operands, and the text
// rendering carries the same facts.
#include <gtest/gtest.h>

#include "driver/explain.h"
#include "frontend/frontend.h"

namespace tilefuse {
namespace {

using nlohmann::json;

json explain_source(const std::string& source, const std::string& target,
                    PlanKind plan = PlanKind::kFused) {
  const Program p = parse_program(source, "test.tfs");
  driver::CompileOptions o;
  o.plan = plan;
  o.target = *tir::Target::parse(target);
  return driver::explain(driver::compile(p.graph, o), p.name);
}

const char* kMlp =
    "def mlp(x: f16[96, 64], idx: i64[80] in [-96, 96), w: f16[64, 48], b: f16[48]):\n"
    "    h = x[idx].float() * 0.5\n"
    "    return torch.relu(h @ w.float() + b)\n";

TEST(Explain, EveryDocumentedKeyWithItsType) {
  const json a = explain_source(kMlp, "sm_80");
  EXPECT_EQ(a.at("program"), "mlp");
  EXPECT_EQ(a.at("target"), "sm_80");
  EXPECT_EQ(a.at("plan"), "fused");
  ASSERT_TRUE(a.at("decisions").is_array());
  EXPECT_FALSE(a.at("decisions").empty());
  ASSERT_EQ(a.at("kernels").size(), 1u);
  const json& k = a.at("kernels")[0];
  EXPECT_EQ(k.at("name"), "gemm0");
  EXPECT_EQ(k.at("kind"), "gemm");
  for (const char* c : {"BLOCK_M", "BLOCK_N", "BLOCK_K", "num_stages", "num_warps", "GROUP_M"})
    EXPECT_TRUE(k.at("config").at(c).is_number_integer()) << c;
  const json& pro = k.at("fused").at("prologue");
  ASSERT_EQ(pro.at("A").size(), 3u) << pro;  // index, cast, mul
  EXPECT_EQ(pro.at("A")[0].get<std::string>().find("=index(x, idx)"), 2u) << pro;
  EXPECT_NE(pro.at("A")[2].get<std::string>().find("=mul("), std::string::npos) << pro;
  EXPECT_NE(pro.at("A")[2].get<std::string>().find(", 0.5)"), std::string::npos) << pro;
  ASSERT_EQ(pro.at("B").size(), 1u) << pro;  // the cast of w
  const json& epi = k.at("fused").at("epilogue");
  ASSERT_EQ(epi.size(), 2u) << epi;  // add (b promoted in the add), relu
  EXPECT_NE(epi[0].get<std::string>().find("=add("), std::string::npos) << epi;
  EXPECT_NE(epi[0].get<std::string>().find(", b)"), std::string::npos) << epi;
  EXPECT_NE(epi.back().get<std::string>().find("=relu("), std::string::npos) << epi;
  for (const json& h : k.at("hoisted")) {
    for (const char* key : {"kind", "what", "from_loop", "to_level"})
      EXPECT_TRUE(h.at(key).is_string()) << key;
    EXPECT_TRUE(h.at("levels").is_number_integer());
    EXPECT_EQ(h.at("what").get<std::string>().find('\n'), std::string::npos);
  }
  bool a_tile = false, b_tile = false;
  for (const json& c : k.at("copies")) {
    for (const char* key : {"buffer", "mode", "reason"}) EXPECT_TRUE(c.at(key).is_string()) << key;
    EXPECT_TRUE(c.at("width_bytes").is_number_integer());
    a_tile |= c.at("operand") == "A" && c.at("role") == "tile";
    b_tile |= c.at("operand") == "B" && c.at("role") == "tile";
    // Prologue math (cast, scale) is done in registers on the way in.
    if (c.at("role") == "tile") {
      EXPECT_EQ(c.at("mode"), "register") << c;
    }
  }
  EXPECT_TRUE(a_tile && b_tile) << k.at("copies");
  EXPECT_EQ(k.at("reads"), json({"x", "idx", "w", "b"}));  // increasing ValueId
  ASSERT_EQ(k.at("writes").size(), 1u);
}

TEST(Explain, UnfusedPlanHasPointwiseKernelsWithTheirOps) {
  const json a = explain_source(kMlp, "cpu", PlanKind::kUnfused);
  EXPECT_EQ(a.at("plan"), "unfused");
  int gemms = 0, pointwise = 0;
  for (const json& k : a.at("kernels")) {
    if (k.at("kind") == "gemm") {
      ++gemms;
      EXPECT_TRUE(k.at("fused").at("prologue").at("A").empty()) << k;
      EXPECT_TRUE(k.at("fused").at("epilogue").empty()) << k;
    } else {
      ++pointwise;
      EXPECT_EQ(k.at("kind"), "pointwise");
      EXPECT_FALSE(k.at("fused").at("compute").empty()) << k;
    }
    for (const json& c : k.at("copies")) EXPECT_EQ(c.at("mode"), "direct") << c;
  }
  EXPECT_EQ(gemms, 1);
  EXPECT_GE(pointwise, 2);
}

TEST(Explain, TextCarriesTheSameFacts) {
  const json a = explain_source(kMlp, "sm_90a");
  const std::string text = driver::render_explain_text(a);
  EXPECT_NE(text.find("mlp: fused plan for sm_90a, 1 kernel\n"), std::string::npos) << text;
  EXPECT_NE(text.find("kernel gemm0 (gemm)"), std::string::npos) << text;
  EXPECT_NE(text.find("BLOCK_M="), std::string::npos) << text;
  EXPECT_NE(
      text.find("prologue A: " + a["kernels"][0]["fused"]["prologue"]["A"][0].get<std::string>()),
      std::string::npos)
      << text;
  for (const json& c : a["kernels"][0]["copies"])
    EXPECT_NE(text.find(c["reason"].get<std::string>()), std::string::npos) << text;
  for (const json& d : a["decisions"])
    EXPECT_NE(text.find(d.get<std::string>()), std::string::npos) << text;
}

}  // namespace
}  // namespace tilefuse
