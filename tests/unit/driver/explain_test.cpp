// The explain account: every key README.md documents is there with its
// type, the fused ops and copies name the right operands, and the text
// rendering carries the same facts.
#include <gtest/gtest.h>
#include <unistd.h>
#include "driver/tune.h"
#include "runtime/cache/tuning_cache.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "driver/explain.h"
#include "frontend/frontend.h"

namespace tilefuse {
namespace {

using nlohmann::json;

json explain_source(const std::string& source, const std::string& target,
                    PlanKind plan = PlanKind::kFused,
                    std::optional<GemmConfig> config = std::nullopt,
                    const tir::CudaOptions& cuda = {}) {
  const Program p = parse_program(source, "test.tfs");
  driver::CompileOptions o;
  o.cuda = cuda;
  o.plan = plan;
  o.target = *tir::Target::parse(target);
  o.lower.gemm_config = config;
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

// The gathered operand's hoisted index copies keep their operand and role
// on both CUDA targets, though on sm_90a producer_start forwards them into
// the producer's registers (cuda_mode null: the CUDA kernel has no such
// copy). (The CPU's gemm packs the gathered rows itself: no index copy.)
TEST(Explain, HoistedIndexCopiesNameTheirOperandOnEveryCudaTarget) {
  const char* seed =
      "def g(x: f16[256, 128], y: f16[128, 128], index: i64[256]):\n    return x[index] @ y\n";
  for (const char* target : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(target);
    const json k = explain_source(seed, target).at("kernels").at(0);
    int hoisted = 0;
    for (const json& c : k.at("copies")) {
      const std::string b = c.at("buffer").get<std::string>();
      if (b == "index_rows" || b == "index_ok") {
        EXPECT_EQ(c.at("operand"), "A") << c;
        EXPECT_EQ(c.at("role"), "hoisted") << c;
        ++hoisted;
        if (std::string(target) == "sm_90a") {
          EXPECT_TRUE(c.at("cuda_mode").is_null()) << c;
        }
      } else {
        EXPECT_EQ(c.at("role"), "tile") << c;
      }
    }
    EXPECT_EQ(hoisted, 2) << k.at("copies");
  }
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
    // On the CPU an unfused GEMM's operand tiles are plain loads of its
    // inputs: the gemm packs them from there (pack_gemm_operands).
    for (const json& c : k.at("copies")) {
      EXPECT_EQ(c.at("mode"), c.at("role") == "tile" ? "gemm_pack" : "direct") << c;
      if (c.at("role") == "tile") {
        EXPECT_NE(c.at("reason").get<std::string>().find("packs this operand straight from"),
                  std::string::npos)
            << c;
      }
    }
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

// The CUDA object: present for CUDA targets only, with every documented key.
TEST(Explain, CudaObjectHasEveryDocumentedKey) {
  EXPECT_FALSE(explain_source(kMlp, "cpu").at("kernels")[0].contains("cuda"));
  const json a = explain_source(kMlp, "sm_80");
  const json& c = a.at("kernels")[0].at("cuda");
  EXPECT_TRUE(c.at("entry").is_string());
  EXPECT_GT(c.at("threads").get<int>(), 0);
  EXPECT_EQ(c.at("threads").get<int>() % 32, 0);
  EXPECT_EQ(c.at("producer_threads").get<int>(), 0);  // sm_80: no warp specialization
  EXPECT_GT(c.at("blocks").get<int64_t>(), 0);
  int64_t shared_bytes = 0;
  for (const json& b : c.at("shared")) {
    EXPECT_TRUE(b.at("name").is_string());
    EXPECT_TRUE(b.at("layout") == "swizzled" || b.at("layout") == "row_major") << b;
    EXPECT_GE(b.at("stages").get<int>(), 1);
    EXPECT_GT(b.at("bytes").get<int64_t>(), 0);
    shared_bytes += b.at("bytes").get<int64_t>();
  }
  EXPECT_GE(c.at("dynamic_shared_bytes").get<int64_t>(), shared_bytes);
  ASSERT_EQ(c.at("gemms").size(), 1u);
  const json& g = c.at("gemms")[0];
  // f32 operands (the prologue casts to f32): the exact FMA path.
  EXPECT_EQ(g.at("family"), "simt.fma") << g;
  EXPECT_EQ(g.at("dtype"), "f32");
  EXPECT_TRUE(g.at("warps_m").is_null() && g.at("warps_n").is_null()) << g;
  for (const char* key : {"block_m", "block_n", "block_k", "accumulators_per_thread"})
    EXPECT_GT(g.at(key).get<int>(), 0) << key;
  EXPECT_EQ(g.at("accumulators_per_thread").get<int>() * c.at("threads").get<int>(),
            g.at("block_m").get<int>() * g.at("block_n").get<int>());
  for (const json& cp : c.at("copies")) {
    EXPECT_TRUE(cp.at("dst").is_string());
    EXPECT_TRUE(cp.at("mode") == "cp_async" || cp.at("mode") == "register") << cp;
    EXPECT_GT(cp.at("width_bytes").get<int>(), 0);
    EXPECT_GE(cp.at("stages").get<int>(), 1);
  }
  EXPECT_TRUE(c.at("notes").is_array());
  const std::string text = driver::render_explain_text(a);
  EXPECT_NE(text.find("  CUDA: " + std::to_string(c.at("threads").get<int>()) + " threads x " +
                      std::to_string(c.at("blocks").get<int64_t>()) + " blocks, "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gemm simt.fma f32 "), std::string::npos) << text;
}

std::vector<std::string> shared_cases() {
  std::vector<std::string> out;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases"))
    if (e.path().extension() == ".tfs") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// For every shared case, both plans and both CUDA targets, lower_copies'
// decisions (the `copies` array) agree with the copies as the emitter
// lowered them (`cuda.copies`): the same mode per destination, and every
// emitted copy has a decision. lower_copies never picks "tma" here
// (Target::tma_copies is false), so there is no tma -> cp_async mapping.
TEST(Explain, CopyDecisionsAgreeWithTheCudaLoweringForEverySharedCase) {
  const std::vector<std::string> cases = shared_cases();
  ASSERT_GE(cases.size(), 5u);
  int compared = 0;
  for (const std::string& path : cases) {
    std::ifstream in(path);
    std::stringstream src;
    src << in.rdbuf();
    for (const char* target : {"sm_80", "sm_90a"})
      for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
        const json a = explain_source(src.str(), target, plan);
        for (const json& k : a.at("kernels")) {
          SCOPED_TRACE(path + " " + target + " " + k.at("name").get<std::string>());
          ASSERT_TRUE(k.contains("cuda"));
          const json& decided = k.at("copies");
          const json& lowered = k.at("cuda").at("copies");
          // Match in program order by destination; dce may have removed a
          // copy lower_copies decided.
          size_t next = 0;
          for (const json& d : decided) {
            EXPECT_NE(d.at("mode"), "direct") << d;
            for (size_t j = next; j < lowered.size(); ++j)
              if (lowered[j].at("dst") == d.at("buffer")) {
                // A TMA tile outside a warp-specialized loop's producer is
                // issued as cp.async, and a note says so.
                if (d.at("mode") == "tma" && lowered[j].at("mode") == "cp_async") {
                  bool noted = false;
                  for (const json& n : k.at("cuda").at("notes"))
                    noted |= n.get<std::string>().find("copy " + d.at("buffer").get<std::string>() +
                                                       ": cp.async, not TMA") == 0;
                  EXPECT_TRUE(noted) << k.at("cuda").at("notes");
                } else {
                  EXPECT_EQ(lowered[j].at("mode"), d.at("mode")) << d << "\n" << lowered[j];
                }
                if (d.at("mode") == "cp_async" || d.at("mode") == "register") {
                  EXPECT_EQ(lowered[j].at("width_bytes"), d.at("width_bytes")) << d;
                }
                EXPECT_EQ(d.at("cuda_mode"), lowered[j].at("mode")) << d;
                next = j + 1;
                ++compared;
                break;
              }
          }
          for (const json& l : lowered) {
            bool has = false;
            for (const json& d : decided) has |= d.at("buffer") == l.at("dst");
            EXPECT_TRUE(has) << l;
          }
        }
      }
  }
  EXPECT_GE(compared, 4 * static_cast<int>(cases.size()));
}

// register_a replaces A's cp.async tile by fragment loads and drops the
// staged index tiles: the decisions say so by their cuda_mode, and the text
// in brackets.
TEST(Explain, CopiesTheCudaPassesReplacedOrDroppedAreMarked) {
  const char* src =
      "def g(x: bf16[64, 256], y: bf16[256, 128], idx: i64[4096] in [0, 64)):\n"
      "    return x[idx] @ y\n";
  GemmConfig c{128, 128, 64, 4, 8, 8};
  c.persistent = true;
  c.register_a = true;
  const json a = explain_source(src, "sm_90a", PlanKind::kFused, c);
  const json& k = a.at("kernels")[0];
  int dropped = 0;
  bool fragment = false;
  for (const json& d : k.at("copies")) {
    if (d.at("buffer") == "A_s") {
      EXPECT_EQ(d.at("mode"), "cp_async");
      EXPECT_EQ(d.at("cuda_mode"), "fragment");
      fragment = true;
    } else if (d.at("buffer") == "B_s") {
      EXPECT_EQ(d.at("cuda_mode"), "tma");
    } else {
      EXPECT_TRUE(d.at("cuda_mode").is_null()) << d;  // the index tiles
      ++dropped;
    }
  }
  EXPECT_TRUE(fragment);
  EXPECT_EQ(dropped, 2);
  const std::string text = driver::render_explain_text(a);
  EXPECT_NE(text.find("TMA needs an affine tile [the CUDA kernel: fragment]\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("[not in the CUDA kernel: its passes dropped it]\n"), std::string::npos);
  // The fragment loads' L1 policy (fragment_no_allocate): in cuda.copies
  // and in the text's copy line.
  auto fragment_copy = [](const json& account) {
    for (const json& cp : account.at("kernels")[0].at("cuda").at("copies"))
      if (cp.at("mode") == "fragment") return cp;
    return json();
  };
  ASSERT_FALSE(fragment_copy(a).is_null());
  EXPECT_EQ(fragment_copy(a).at("no_allocate"), false);
  EXPECT_NE(text.find("    copy A_s fragment 16 B"), std::string::npos) << text;
  tir::CudaOptions na;
  na.fragment_no_allocate = true;
  const json b = explain_source(src, "sm_90a", PlanKind::kFused, c, na);
  ASSERT_FALSE(fragment_copy(b).is_null());
  EXPECT_EQ(fragment_copy(b).at("no_allocate"), true);
  const std::string na_text = driver::render_explain_text(b);
  EXPECT_NE(na_text.find("    copy A_s fragment (.L1::no_allocate) 16 B"), std::string::npos)
      << na_text;
  // The same program without register_a: every copy as decided, no brackets.
  c.register_a = false;
  const std::string plain = driver::render_explain_text(explain_source(src, "sm_90a",
                                                                       PlanKind::kFused, c));
  EXPECT_EQ(plain.find(" [the CUDA kernel"), std::string::npos) << plain;
  EXPECT_EQ(plain.find(" [not in the CUDA kernel"), std::string::npos) << plain;
}

// Every key path of an account ("kernels[].cuda.gemms[].family"), not
// descending into the objects keyed by data (the config, the prologue's
// operands).
void key_paths(const json& j, const std::string& path, std::set<std::string>& out) {
  if (j.is_object() && path != "kernels[].config" && path != "kernels[].fused.prologue" &&
      path != "tuning.gemm_config") {
    for (const auto& [key, value] : j.items()) {
      const std::string p = path.empty() ? key : path + "." + key;
      out.insert(p);
      key_paths(value, p, out);
    }
  } else if (j.is_array()) {
    for (const json& e : j) key_paths(e, path + "[]", out);
  }
}

// README.md's table of explain keys is complete and has no key explain does
// not write: the union of the keys of a few accounts (CPU and CUDA, both
// plans, a gather with hoisted buffers) equals the documented keys.
TEST(Explain, ReadmeTableListsExactlyTheKeys) {
  std::ifstream in(std::string(TILEFUSE_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(in.good());
  std::set<std::string> documented;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const std::string cell = line.substr(2, line.find(" |", 2) - 2);
    std::string first;
    for (size_t b = cell.find('`'); b != std::string::npos; b = cell.find('`', b)) {
      const size_t e = cell.find('`', b + 1);
      const std::string key = cell.substr(b + 1, e - b - 1);
      if (first.empty()) {
        first = key;
        documented.insert(key);
      } else {  // a sibling of the first: `...gemms[].block_m`, `block_n`
        documented.insert(first.substr(0, first.rfind('.') + 1) + key);
      }
      b = e + 1;
    }
  }
  ASSERT_GE(documented.size(), 30u);
  std::ifstream seed_file(std::string(TILEFUSE_SOURCE_DIR) + "/tests/cases/seed_gather_mm_f16.tfs");
  std::stringstream seed;
  seed << seed_file.rdbuf();
  std::set<std::string> written;
  key_paths(explain_source(seed.str(), "sm_80"), "", written);
  // The warp-specialized wgmma loop (warp roles, register budgets, a staged
  // epilogue) and an in-order loop (a gather along K).
  key_paths(explain_source(seed.str(), "sm_90a"), "", written);
  {
    std::ifstream along_k(std::string(TILEFUSE_SOURCE_DIR) +
                          "/tests/cases/gather_b_rows_along_k.tfs");
    std::stringstream text;
    text << along_k.rdbuf();
    key_paths(explain_source(text.str(), "sm_80"), "", written);
  }
  key_paths(explain_source(kMlp, "sm_90a"), "", written);
  key_paths(explain_source(kMlp, "cpu", PlanKind::kUnfused), "", written);
  key_paths(explain_source(kMlp, "sm_80", PlanKind::kUnfused), "", written);
  // Split-K: the factor and why.
  {
    const json s =
        explain_source(kMlp, "sm_90a", PlanKind::kFused, GemmConfig{64, 64, 16, 2, 4, 8, 2});
    key_paths(s, "", written);
    const json& k = s.at("kernels").at(0);
    ASSERT_TRUE(k.contains("split_k"));
    EXPECT_EQ(k.at("split_k").at("factor"), 2);
    EXPECT_NE(k.at("split_k").at("why").get<std::string>().find("split-K 2: 2 tiles for 132 SMs"),
              std::string::npos)
        << k.dump();
    EXPECT_NE(driver::render_explain_text(s).find("split-K 2: "), std::string::npos);
    // explain has no device: it assumes the target's usual part (an A100's
    // 108 SMs on sm_80), not an H100's.
    const json a =
        explain_source(kMlp, "sm_80", PlanKind::kFused, GemmConfig{64, 64, 16, 2, 4, 8, 2});
    EXPECT_NE(a.at("kernels").at(0).at("split_k").at("why").get<std::string>().find(
                  "split-K 2: 2 tiles for 108 SMs"),
              std::string::npos)
        << a.dump();
  }
  // Stream-K: the blocks, whether the persistent pass took it, and why.
  {
    GemmConfig c{64, 64, 16, 2, 4, 8};
    c.stream_k = 3;
    c.persistent = true;
    const json s = explain_source(kMlp, "sm_90a", PlanKind::kFused, c);
    key_paths(s, "", written);
    const json& k = s.at("kernels").at(0);
    ASSERT_TRUE(k.contains("stream_k")) << k.dump();
    EXPECT_EQ(k.at("stream_k").at("blocks"), 3);
    EXPECT_NE(k.at("stream_k").at("why").get<std::string>().find("stream-K over "),
              std::string::npos)
        << k.dump();
    EXPECT_NE(driver::render_explain_text(s).find("stream-K over "), std::string::npos);
  }
  // A config beyond the target's shared memory: shown, with why run, bench
  // and the tuner reject it.
  {
    const json s =
        explain_source(seed.str(), "sm_90a", PlanKind::kFused, GemmConfig{128, 256, 64, 8, 8, 8});
    key_paths(s, "", written);
    const json& k = s.at("kernels").at(0);
    ASSERT_TRUE(k.contains("shared_memory_error")) << k.dump();
    EXPECT_GT(k.at("shared_bytes").get<int64_t>(), 232448);
    EXPECT_NE(driver::render_explain_text(s).find("  warning: kernel"), std::string::npos);
  }
  // Symbolic dims: the symbols, the specialization, and a tuning note (per
  // size bucket: none without sizes).
  const json symbolic = explain_source(
      "def g(x: f16[T, 64], w: f16[64, 48], idx: i64[M] in [0, T)):\n    return x[idx] @ w\n",
      "sm_90a");
  EXPECT_EQ(symbolic.at("kernels")[0].at("cuda").at("blocks"), -1);
  key_paths(symbolic, "", written);
  // A tuned program: a cached tuning choice in a private cache directory.
  {
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("tf-explain-" + std::to_string(::getpid())))
            .string();
    const char* old = std::getenv("TILEFUSE_CACHE_DIR");
    const std::string saved = old ? old : "";
    ::setenv("TILEFUSE_CACHE_DIR", dir.c_str(), 1);
    const Program p = parse_program(kMlp, "test.tfs");
    driver::TuneDevice dev;
    dev.name = "NVIDIA H200";
    dev.target = *tir::Target::parse("sm_90a");
    driver::TunedChoice c;
    c.plan = PlanKind::kFused;
    GemmConfig g;
    c.gemm_config = c.fused_config = c.unfused_config = g;
    c.fused_us = 10.0;
    c.unfused_us = 15.0;
    c.candidates.push_back({PlanKind::kFused, g, 10.0, 20, ""});
    c.candidates.push_back({PlanKind::kUnfused, g, 15.0, 20, ""});
    c.tuned_at = "2026-11-30T00:00:00Z";
    c.tuning_seconds = 1.5;
    c.device = dev.key();
    ASSERT_TRUE(cache::TuningCache(cache::default_tuning_cache_dir())
                    .put(driver::tuning_key(p.graph, dev).material(), driver::choice_to_json(c)));
    const json tuned = explain_source(kMlp, "sm_90a");
    EXPECT_EQ(tuned.at("tuning").at("tuned"), true) << tuned.at("tuning");
    EXPECT_EQ(tuned.at("tuning").at("plan"), "fused");
    EXPECT_NEAR(tuned.at("tuning").at("speedup").get<double>(), 1.5, 1e-9);
    key_paths(tuned, "", written);
    if (old) {
      ::setenv("TILEFUSE_CACHE_DIR", saved.c_str(), 1);
    } else {
      ::unsetenv("TILEFUSE_CACHE_DIR");
    }
    std::filesystem::remove_all(dir);
  }
  for (const std::string& k : written) EXPECT_TRUE(documented.count(k)) << "undocumented: " << k;
  for (const std::string& k : documented) EXPECT_TRUE(written.count(k)) << "not written: " << k;
}

}  // namespace
}  // namespace tilefuse
