// `--allow-tf32` on the device (issue 4: "tf32 MMA only under --allow-tf32"):
// f32 GEMMs compiled with allow_tf32 run Tf32MmaTile (mma.sync m16n8k8 .tf32,
// operands rounded with cvt.rna). On fresh random inputs, both plans:
//  - the error against the f64 oracle is within check_tolerance(..., true)
//    (kTf32Tolerance) and, for a plain GEMM on uniform inputs, near what
//    TF32 rounding gives (~2.7e-4; bounded by 1e-3), while the exact path
//    stays within f32's 1e-5;
//  - the output is NOT bit-identical to the exact path's (K is large enough
//    that some operand rounding shows);
//  - against the oracle evaluated on the operands rounded to TF32 on the
//    host (round to nearest, ties away: what cvt.rna does) the output is
//    within f32's tolerance: the rounding is cvt.rna's, not truncation (which
//    is what the mma does to raw f32 bits), and the fragments are right.
// Also a config with 128 accumulators per thread (where an f16 GEMM would
// double-buffer its fragments; a TF32 one does not) and the cuBLASLt baseline under allow_tf32 (its describe()
// says "(tf32)", its error within the same tolerance).
//
// Every test skips (with the reason) where CUDA or a GPU is missing;
// TILEFUSE_GPU_SEED=<seed> reproduces a run.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "frontend/frontend.h"
#include "gpu_test_util.h"
#include "reference/eval.h"
#include "reference/inputs.h"
#include "runtime/cuda/cublaslt.h"

namespace tilefuse {
namespace {

using gputest::fresh_seed;

// A plain GEMM (cuBLASLt can run it in the unfused plan), a GEMM with a bias
// + relu epilogue (paired stores), and a batched one; M, N, K are not
// multiples of the tiles.
constexpr const char* kPlain =
    "def mm(x: f32[300, 520], w: f32[520, 260]):\n    return x @ w\n";
constexpr const char* kMlp =
    "def mlp(x: f32[333, 700], w: f32[700, 250], b: f32[250]):\n"
    "    return torch.relu(x @ w + b)\n";
constexpr const char* kBatched =
    "def bmm(x: f32[3, 100, 384], w: f32[3, 384, 72]):\n    return x @ w\n";

driver::CompiledProgram compile_for_device(const Graph& g, PlanKind plan, bool allow_tf32,
                                           std::optional<GemmConfig> config = std::nullopt) {
  std::optional<tir::Target> target = gputest::device_target();
  if (!target) throw UserError("the GPU is " + driver::default_device().arch());
  driver::CompileOptions co;
  co.plan = plan;
  co.target = *target;
  co.allow_tf32 = allow_tf32;
  co.lower.gemm_config = config;
  return driver::compile(g, co);
}

std::vector<Tensor> oracle_of(const Graph& g, const std::vector<Tensor>& inputs) {
  EvalOptions o;
  o.mode = EvalMode::kOracle;
  return evaluate(g, inputs, o);
}

// x rounded to TF32 as cvt.rna.tf32.f32 does (PTX ISA 9.7.9.21): to the
// nearest value with 10 mantissa bits, ties away from zero (add half of the
// dropped 13 bits' range to the magnitude, then clear them). Finite inputs
// only (the tests' inputs are in [-1, 1)).
float round_tf32(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  b = (b + 0x1000u) & ~0x1fffu;
  float r;
  std::memcpy(&r, &b, 4);
  return r;
}

Tensor rounded_tf32(const Tensor& t) {
  Tensor r = Tensor::empty(t.dtype(), t.shape());
  Tensor c = t.contiguous();
  for (int64_t i = 0; i < c.numel(); ++i)
    r.set_linear(i, round_tf32(static_cast<float>(c.get_linear(i))));
  return r;
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.shape() == y.shape() && x.dtype() == y.dtype() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.numel()) *
                                                     dtype_size(x.dtype())) == 0;
}

// The f32 gemm kernel's family (one gemm kernel per program here).
std::string gemm_family(const driver::CompiledProgram& p) {
  std::string family;
  for (const driver::CompiledKernel& ck : p.kernels)
    for (const codegen::CudaGemm& g : ck.cuda->gemms) family = g.family;
  return family;
}

// Runs `src` both plans, exact and TF32, and checks everything at the top of
// the file. `rounded_params`: the parameters that feed the GEMM directly
// (rounded on the host for the TF32-emulating oracle; the bias is not a
// GEMM operand).
void check_program(const std::string& src, const std::vector<size_t>& rounded_params,
                   uint64_t seed, std::optional<GemmConfig> config = std::nullopt) {
  cuda::Device& dev = driver::default_device();
  const Program p = parse_program(src, "tf32.tfs");
  const Graph& g = p.graph;
  const std::vector<Tensor> inputs = make_random_inputs(g, seed);
  const std::vector<Tensor> refs = oracle_of(g, inputs);
  std::vector<Tensor> rounded_inputs = inputs;
  for (size_t i : rounded_params) rounded_inputs[i] = rounded_tf32(inputs[i]);
  const std::vector<Tensor> tf32_refs = oracle_of(g, rounded_inputs);
  const double tol = check_tolerance(g, g.outputs()[0], /*allow_tf32=*/true);
  EXPECT_EQ(tol, kTf32Tolerance);
  for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
    if (config && plan == PlanKind::kUnfused) continue;
    SCOPED_TRACE(std::string(plan_kind_name(plan)) + " plan, seed " + std::to_string(seed) +
                 "\n" + src);
    const driver::CompiledProgram exact = compile_for_device(g, plan, false, config);
    const driver::CompiledProgram tf32 = compile_for_device(g, plan, true, config);
    EXPECT_EQ(gemm_family(exact), "simt.fma");
    ASSERT_EQ(gemm_family(tf32), "mma.sync.m16n8k8.tf32");
    driver::CudaProgram exact_prog(exact, dev), tf32_prog(tf32, dev);
    const std::vector<Tensor> e = exact_prog.run(inputs, /*poison=*/true);
    const std::vector<Tensor> t = tf32_prog.run(inputs, /*poison=*/true);
    ASSERT_EQ(e.size(), 1u);
    ASSERT_EQ(t.size(), 1u);
    const double exact_err = relative_error(e[0], refs[0]);
    const double tf32_err = relative_error(t[0], refs[0]);
    const double emulated_err = relative_error(t[0], tf32_refs[0]);
    std::printf("tf32 %s (%s): rel_err exact %.3e, tf32 %.3e, tf32 vs emulated %.3e\n",
                p.name.c_str(), std::string(plan_kind_name(plan)).c_str(), exact_err, tf32_err,
                emulated_err);
    EXPECT_LE(exact_err, 1e-5);
    EXPECT_LE(tf32_err, tol);  // false for NaN
    EXPECT_LE(tf32_err, 1e-3) << "TF32 rounding of uniform inputs gives ~2.7e-4";
    EXPECT_GT(tf32_err, exact_err) << "the TF32 path rounds its operands";
    EXPECT_FALSE(bit_identical(e[0], t[0])) << "the TF32 path ran the exact FMA";
    EXPECT_LE(emulated_err, 1e-5) << "not cvt.rna's rounding, or wrong fragments";
    EXPECT_EQ(gputest::count_nan(t[0]), 0);
  }
}

TEST(GpuTf32, PlainEpilogueAndBatchedGemmsBothPlans) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  const uint64_t seed = fresh_seed();
  std::printf("GPU tf32, TILEFUSE_GPU_SEED=%llu\n", static_cast<unsigned long long>(seed));
  check_program(kPlain, {0, 1}, seed);
  check_program(kMlp, {0, 1}, seed + 1);
  check_program(kBatched, {0, 1}, seed + 2);
}

// 128 accumulators per thread, the largest tile the tuner tries (the
// emitter keeps it off the fragment-double-buffered path).
TEST(GpuTf32, LargestTile) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  const uint64_t seed = fresh_seed();
  GemmConfig c;
  c.block_m = 128, c.block_n = 256, c.block_k = 32, c.num_stages = 3, c.num_warps = 8;
  c.group_m = 8;
  const std::string big = "def mm(x: f32[512, 1024], w: f32[1024, 768]):\n    return x @ w\n";
  check_program(big, {0, 1}, seed, c);
}

// The cuBLASLt baseline under allow_tf32 (CUBLAS_COMPUTE_32F_FAST_TF32)
// within the same tolerance. (FAST_TF32 allows TF32, it does not require it:
// whether cuBLASLt's result differs from the exact one is only printed.)
TEST(GpuTf32, CublasLtBaselineFollowsTheFlag) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  std::string why;
  if (!cuda::cublaslt_available(&why)) GTEST_SKIP() << "cuBLASLt unavailable: " << why;
  cuda::Device& dev = driver::default_device();
  const uint64_t seed = fresh_seed();
  const Program p = parse_program(kPlain, "tf32.tfs");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
  const std::vector<Tensor> refs = oracle_of(p.graph, inputs);
  driver::CudaProgramOptions po;
  po.cublaslt_gemms = true;
  std::vector<Tensor> outs[2];
  for (bool allow : {false, true}) {
    const driver::CompiledProgram compiled = compile_for_device(p.graph, PlanKind::kUnfused, allow);
    driver::CudaProgram prog(compiled, dev, po);
    ASSERT_EQ(prog.cublaslt_steps().size(), 1u);
    EXPECT_EQ(prog.stats()[prog.cublaslt_steps()[0]].name.find("(tf32)") != std::string::npos,
              allow);
    outs[allow] = prog.run(inputs, /*poison=*/true);
    const double err = relative_error(outs[allow][0], refs[0]);
    std::printf("cuBLASLt allow_tf32=%d: rel_err %.3e (seed %llu)\n", allow, err,
                static_cast<unsigned long long>(seed));
    EXPECT_LE(err, allow ? kTf32Tolerance : 1e-5);
  }
  std::printf("cuBLASLt with allow_tf32 %s the exact result\n",
              bit_identical(outs[0][0], outs[1][0]) ? "reproduces" : "differs from");
}

}  // namespace
}  // namespace tilefuse
