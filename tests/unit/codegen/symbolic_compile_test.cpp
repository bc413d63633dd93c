// Kernels with symbolic dims on the CUDA backend (compile-only: NVRTC needs no
// GPU): the grid and every global offset are expressions of the scalar params,
// the block count is left to the runtime, offsets are 32-bit under
// index_bits = 32 and 64-bit otherwise, and every specialization compiles for
// sm_80 and sm_90a (without spills on sm_80 with 32-bit indexing).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/cuda/emit.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "frontend/frontend.h"
#include "runtime/cuda/loader.h"
#include "runtime/cuda/nvrtc.h"

namespace tilefuse {
namespace {

constexpr const char* kTokens =
    "def tokens(x: f16[T, 256], y: f16[256, N], index: i64[M] in [0, T)):\n"
    "    return x[index] @ y\n";

constexpr const char* kMixed =
    "def mixed(x: bf16[T, K], w: bf16[K, 96], b: bf16[96], idx: i32[M] in [-T, T)):\n"
    "    h = torch.relu(x[idx].float() @ w.float() + b.float())\n"
    "    return h.to(torch.bfloat16), h * 2.0\n";

driver::CompiledProgram compile_symbolic(const char* src, const char* target, PlanKind plan,
                                         const Specialization& spec) {
  const Program p = parse_program(src, "p.tfs");
  driver::CompileOptions co;
  co.plan = plan;
  co.target = *tir::Target::parse(target);
  co.lower.specialization = spec;
  return driver::compile(p.graph, co);
}

Specialization spec_of(size_t symbols, bool div16, bool index64, std::vector<int64_t> hints) {
  Specialization s;
  s.divisible_by_16.assign(symbols, div16);
  s.index64 = index64;
  s.size_hints = std::move(hints);
  return s;
}

TEST(SymbolicCuda, GridAndOffsetsAreExpressionsOfTheScalars) {
  const driver::CompiledProgram c =
      compile_symbolic(kTokens, "sm_80", PlanKind::kFused, spec_of(3, true, false, {4096, 512, 64}));
  ASSERT_EQ(c.kernels.size(), 1u);
  const codegen::CudaKernel& k = *c.kernels[0].cuda;
  EXPECT_EQ(k.grid, -1);  // the runtime evaluates the grid's extents
  // The scalars after the buffers, before the status word.
  EXPECT_NE(k.source.find("int T,\n    int N,\n    int M,\n    tf::Status*"), std::string::npos)
      << k.source;
  // Program ids from the symbolic extents; offsets over N in 32 bits.
  EXPECT_NE(k.source.find("static_cast<int>(blockIdx.x)"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("* (N)"), std::string::npos) << k.source;
  EXPECT_EQ(k.source.find("static_cast<long long>(N)"), std::string::npos) << k.source;
  // With 64-bit indexing the symbols are long long and so are the offsets.
  const driver::CompiledProgram w =
      compile_symbolic(kTokens, "sm_80", PlanKind::kFused, spec_of(3, true, true, {4096, 512, 64}));
  const std::string& s64 = w.kernels[0].cuda->source;
  EXPECT_NE(s64.find("long long T,\n    long long N,\n    long long M,"), std::string::npos) << s64;
}

TEST(SymbolicCuda, FixedKernelsKeepTheirConstantGrid) {
  const Program p = parse_program(
      "def f(x: f16[64, 32], y: f16[32, 48]):\n    return x @ y\n", "f.tfs");
  driver::CompileOptions co;
  co.target = *tir::Target::parse("sm_80");
  const driver::CompiledProgram c = driver::compile(p.graph, co);
  EXPECT_GT(c.kernels[0].cuda->grid, 0);
}

class SymbolicCudaCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::load_nvrtc(&why)) GTEST_SKIP() << "NVRTC unavailable: " << why;
  }
};

TEST_F(SymbolicCudaCompile, EverySpecializationCompilesWithoutSpills) {
  int n = 0, compiled = 0;
  struct Case {
    const char* src;
    size_t symbols;
    std::vector<int64_t> hints;
  };
  const Case cases[] = {{kTokens, 3, {4096, 2048, 1}},
                        {kTokens, 3, {4096, 2048, 8192}},
                        {kMixed, 3, {512, 64, 32}},
                        {kMixed, 3, {64, 1024, 1}}};
  // Every case on both archs and plans at the plain specialization; the
  // divisibility promise and 64-bit indexing on the first case (they change
  // the copies and the offsets, not the rest).
  struct Variant {
    const Case* cs;
    const char* arch;
    PlanKind plan;
    bool div16, index64;
  };
  std::vector<Variant> variants;
  for (const Case& cs : cases)
    for (const char* arch : {"sm_80", "sm_90a"})
      for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused})
        variants.push_back({&cs, arch, plan, false, false});
  for (const char* arch : {"sm_80", "sm_90a"})
    for (auto [div16, index64] : {std::pair{true, false}, std::pair{false, true}})
      variants.push_back({&cases[0], arch, PlanKind::kFused, div16, index64});
  for (const Variant& v : variants) {
    const char* arch = v.arch;
    const bool index64 = v.index64;
    const driver::CompiledProgram prog = compile_symbolic(
        v.cs->src, arch, v.plan, spec_of(v.cs->symbols, v.div16, index64, v.cs->hints));
    for (const driver::CompiledKernel& ck : prog.kernels) {
      ASSERT_TRUE(ck.cuda.has_value());
      SCOPED_TRACE(std::string(arch) + " " + ck.kernel.name + (v.div16 ? " div16" : "") +
                   (index64 ? " i64" : ""));
      cuda::CompiledKernel k;
      try {
        k = cuda::compile_cuda(ck.cuda->source, ck.cuda->name + "_s" + std::to_string(n++),
                               driver::cuda_compile_options(arch));
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what() << "\n" << ck.cuda->source;
        continue;
      }
      EXPECT_FALSE(k.cubin.empty());
      // No spills with 32-bit indexing on sm_80. Elsewhere the run-time
      // strides cost registers the constants did not: 64-bit index math,
      // and the sm_90a producer warpgroup (its register budget is cut to
      // feed the MMA warpgroups, and it issues cp.async where a fixed shape
      // would use TMA) spill a few bytes at the largest tiles; a blow-up
      // past 64 bytes still fails.
      if (k.usage.present) {
        const bool strict = std::string(arch) == "sm_80" && !index64;
        EXPECT_LE(k.usage.spill_store_bytes, strict ? 0 : 64) << k.log;
        EXPECT_LE(k.usage.spill_load_bytes, strict ? 0 : 64) << k.log;
      }
      ++compiled;
    }
  }
  EXPECT_GE(compiled, 20);
}

}  // namespace
}  // namespace tilefuse
