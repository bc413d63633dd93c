// The property test on the GPU: 200 random programs from the CPU property
// test's generator (tests/common/random_program.h, the same options as
// tests/unit/lower/property_test.cpp: prologue chains, gathers with negative
// indices, slices, transposes, broadcasts, epilogues of biases, activations,
// scalings and casts; M, N, K in [0, 300] with 0 and 1 drawn often; f16,
// bf16, f32), each compiled in both plans for the device's arch and run with
// CudaProgram on the same random inputs, every output poisoned first. Seeds
// 2 mod 4 run split-K (2-4 splits of the heuristic tiles: the workspace, the
// last block's fixup, the epilogue applied once).
//
// Each output is held to the CPU test's references, with the tolerance of the
// least precise floating dtype it depends on (1e-2 f16/bf16, 0.15 f8, 1e-5
// f32), and the CPU test's rules for the oracle skips:
//   - where the eager reference is finite and within tolerance of the f64
//     oracle (the program is well conditioned at its dtype): the GPU output
//     must be within tolerance of the oracle, and within twice the tolerance
//     of eager and of the other plan (each within tolerance of the oracle;
//     the GPU sums in another order than the CPU, so not bit for bit);
//   - where eager is finite but itself beyond tolerance of the oracle
//     (ill-conditioned: a `where` flipped by rounding, a bf16 chain): within
//     tolerance of eager, or no farther from the oracle than eager is plus the
//     tolerance;
//   - where eager overflowed (the oracle has no meaningful comparison): within
//     tolerance of eager; or, where the GPU's summation order moves an
//     overflow, within tolerance of eager on the elements both have finite,
//     accepting those finite only in the GPU's output whose exact value fits
//     the dtype (eager is infinitely far from the oracle there), with at most
//     1% of the elements otherwise finite in one and not the other.
//
// NVRTC is the slow part (~0.2-0.5 s a kernel): a pool of threads prepares
// the programs ahead of the GPU (graph, inputs, references, both plans
// compiled, every kernel through the kernel cache), and the main thread then
// builds each CudaProgram (cache hits) and runs it.
//
// The seed is fresh per run (printed); to reproduce a run or one program:
//   TILEFUSE_GPU_SEED=<seed> [TILEFUSE_GPU_PROPERTY_COUNT=1]
//     build/tests/test_gpu --gtest_filter='GpuProperty.*'
// Program i of a run uses seed base + i.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/random_program.h"
#include "common/tolerance.h"
#include "core/error.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "gpu_test_util.h"
#include "reference/eval.h"
#include "reference/inputs.h"
#include "runtime/cache/kernel_cache.h"

namespace tilefuse {
namespace {

constexpr int kPrograms = 200;
constexpr PlanKind kPlans[] = {PlanKind::kFused, PlanKind::kUnfused};

using testing::cone_tolerance;

// The largest finite value of a floating dtype (IEEE 754 binary16/32/64,
// bfloat16, OCP FP8 E4M3/E5M2); +inf for the others, whose values never overflow to non-finite.
double largest_finite(DType dt) {
  switch (dt) {
    case DType::F8E4M3: return 448.0;
    case DType::F8E5M2: return 57344.0;
    case DType::F16: return 65504.0;
    case DType::BF16: return 3.3895313892515355e38;
    case DType::F32: return std::numeric_limits<float>::max();
    case DType::F64: return std::numeric_limits<double>::max();
    default: return std::numeric_limits<double>::infinity();
  }
}

// Where eager overflowed: `out` against `eager` on the elements finite in
// both (relative error within `tol`), and at most 1% of the elements finite
// in one only (a NaN in `out` where eager has a number counts too). An
// element whose exact value (the f64 `oracle`) lies beyond the output
// dtype's largest finite value has no right answer in that dtype: there any
// non-finite value of `out` is accepted, whichever of NaN, +inf or -inf the
// order of the overflowing sums produced (eager's order is not the kernel's).
// An element finite in `out` where eager overflowed but whose exact value
// fits the dtype (an intermediate sum or product beyond the range in eager's
// order, not in the kernel's) is accepted: eager is infinitely far from the
// oracle there, and the kernel no farther -- the rule for ill-conditioned
// outputs below. The oracle cannot judge its value more closely: such an
// element is a sum that cancels terms near the dtype's limit, where the
// program's own rounding of its operands (bf16 has 8 bits) is amplified
// (GPU seed 620674726: a column 0.2 from the f64 oracle, eager inf).
bool matches_overflowed(const Tensor& out, const Tensor& eager, const Tensor& oracle,
                        double tol, std::string* why = nullptr) {
  const int64_t n = out.numel();
  const double dtype_max = largest_finite(out.dtype());
  int64_t differ = 0, finite_in_out_only = 0, finite_in_eager_only = 0, both_inf_fits = 0;
  int64_t finite_here_fits = 0;
  double diff2 = 0, ref2 = 0, odiff2 = 0, oref2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double o = out.get_linear(i), e = eager.get_linear(i);
    if (std::isfinite(o) && std::isfinite(e)) {
      diff2 += (o - e) * (o - e);
      ref2 += e * e;
    } else if (o == e || (std::isnan(o) && std::isnan(e))) {
      // the same non-finite value
    } else if (!std::isfinite(o) && !std::isfinite(e) &&
               !(std::fabs(oracle.get_linear(i)) <= dtype_max)) {
      // both overflowed where the exact value does not fit the dtype
    } else if (std::isfinite(o) && std::fabs(oracle.get_linear(i)) <= dtype_max) {
      const double r = oracle.get_linear(i);
      odiff2 += (o - r) * (o - r);
      oref2 += r * r;
      ++finite_here_fits;
    } else {
      ++differ;
      finite_in_out_only += std::isfinite(o);
      finite_in_eager_only += std::isfinite(e);
      both_inf_fits += !std::isfinite(o) && !std::isfinite(e);
    }
  }
  if (why != nullptr) {
    *why = fmt::format(
        "{} of {} elements differ in finiteness or kind (finite only here {}, only in eager {}, "
        "both non-finite where the exact value fits {}); finite in both: {:.3g} from eager; "
        "finite here only where the exact value fits: {}, {:.3g} from the oracle",
        differ, n, finite_in_out_only, finite_in_eager_only, both_inf_fits,
        ref2 > 0 ? std::sqrt(diff2 / ref2) : (diff2 == 0 ? 0.0 : INFINITY), finite_here_fits,
        oref2 > 0 ? std::sqrt(odiff2 / oref2) : (odiff2 == 0 ? 0.0 : INFINITY));
  }
  if (differ * 100 > n) return false;
  if (diff2 == 0) return true;
  return ref2 > 0 && std::sqrt(diff2) <= tol * std::sqrt(ref2);
}

// One program, made ready on a worker thread.
struct Prepared {
  uint64_t seed = 0;
  std::optional<Graph> graph;
  std::vector<Tensor> inputs, eager, oracle;
  std::vector<driver::CompiledProgram> compiled;  // one per kPlans
  int kernels = 0;
  std::string failure;  // set when preparing failed (a failure of the test)
};

std::string header(uint64_t seed, const Graph* g) {
  return "seed " + std::to_string(seed) + " (rerun: TILEFUSE_GPU_SEED=" + std::to_string(seed) +
         " TILEFUSE_GPU_PROPERTY_COUNT=1; odd seeds with 16-bit GEMMs use a 4-stage config)\n" +
         (g ? "program:\n" + g->to_string() : "");
}

void prepare(Prepared& p, const tir::Target& target) {
  testing::RandomProgramOptions opts;
  opts.max_dim = 300;
  opts.edge_dim_chance = 0.2;
  opts.negative_index_chance = 0.5;
  opts.more_epilogues = true;
  p.graph = testing::RandomProgram(p.seed, opts).build();
  const Graph& g = *p.graph;
  p.inputs = make_random_inputs(g, p.seed);
  EvalOptions eager_opts, oracle_opts;
  eager_opts.num_threads = 1;
  oracle_opts.num_threads = 1;
  oracle_opts.mode = EvalMode::kOracle;
  try {
    p.eager = evaluate(g, p.inputs, eager_opts);
    p.oracle = evaluate(g, p.inputs, oracle_opts);
  } catch (const std::exception& e) {
    p.failure = header(p.seed, &g) + "reference evaluator threw: " + e.what() + "\n";
    return;
  }
  for (PlanKind kind : kPlans) {
    try {
      driver::CompileOptions co;
      co.plan = kind;
      co.target = target;
      p.compiled.push_back(driver::compile(g, co));
      // Odd seeds whose GEMMs all take 16-bit operands: a 4-stage config too
      // (on sm_90a the wgmma loop that keeps one MMA group in flight; the
      // heuristic configs have 3 stages), chosen by the seed.
      bool sixteen_bit = p.seed % 2 == 1 && target.has_wgmma();  // (192 KB tiles: H100/H200)
      for (const driver::CompiledKernel& ck : p.compiled.back().kernels) {
        if (!ck.cuda) continue;
        for (const codegen::CudaGemm& gm : ck.cuda->gemms)
          sixteen_bit = sixteen_bit && (gm.dtype == "f16" || gm.dtype == "bf16");
      }
      // Seeds 2 mod 4: split-K (2, 3 or 4 splits by the seed) over the
      // heuristic tiles of the first GEMM kernel; K tails and empty splits
      // come with the random K.
      if (p.seed % 4 == 2) {
        for (const driver::CompiledKernel& ck : p.compiled.back().kernels) {
          if (!ck.lowered.gemm_config) continue;
          GemmConfig split = *ck.lowered.gemm_config;
          split.split_k = 2 + static_cast<int>((p.seed / 4) % 3);
          co.lower.gemm_config = split;
          p.compiled.back() = driver::compile(g, co);
          break;
        }
      }
      if (sixteen_bit) {
        static const GemmConfig kFourStages[] = {{128, 128, 64, 4, 8, 8}, {64, 128, 64, 4, 4, 8},
                                                 {128, 256, 64, 4, 8, 8}, {64, 64, 32, 4, 4, 8}};
        co.lower.gemm_config = kFourStages[(p.seed / 2) % 4];
        p.compiled.back() = driver::compile(g, co);
      }
      // NVRTC through the kernel cache with CudaProgram's options, so that
      // the CudaProgram built on the main thread finds every kernel there.
      const driver::CompiledProgram& c = p.compiled.back();
      for (const driver::CompiledKernel& ck : c.kernels) {
        if (!ck.cuda) continue;  // CudaProgram reports it
        cache::compile_cuda_cached(ck.cuda->source, ck.cuda->name,
                                   driver::cuda_compile_options(c.target.name()));
        ++p.kernels;
      }
    } catch (const std::exception& e) {
      // Reported with the other plan's outcome; the program is not run.
      if (p.failure.empty()) p.failure = header(p.seed, &g);
      p.failure +=
          std::string(plan_kind_name(kind)) + " plan failed to compile: " + e.what() + "\n";
    }
  }
}

// Prepares programs base, base + 1, … (count of them) on `workers` threads,
// which take them in order, and hands each to `check` on the calling thread,
// in order, as soon as it is ready (the GPU work follows the compiles).
template <class Check>
void for_each_prepared(int count, uint64_t base, const tir::Target& target, int workers,
                       Check check) {
  std::vector<Prepared> prepared(static_cast<size_t>(count));
  std::vector<std::promise<void>> ready(static_cast<size_t>(count));
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w) {
    pool.emplace_back([&] {
      for (int i; (i = next.fetch_add(1)) < count;) {
        Prepared& p = prepared[static_cast<size_t>(i)];
        p.seed = base + static_cast<uint64_t>(i);
        try {
          prepare(p, target);
        } catch (const std::exception& e) {
          p.failure = header(p.seed, p.graph ? &*p.graph : nullptr) +
                      "preparing the program threw: " + e.what() + "\n";
        }
        ready[static_cast<size_t>(i)].set_value();
      }
    });
  }
  for (int i = 0; i < count; ++i) {
    ready[static_cast<size_t>(i)].get_future().wait();
    try {
      check(prepared[static_cast<size_t>(i)]);
    } catch (...) {
      next = count;  // the workers stop after their current program
      for (std::thread& t : pool) t.join();
      throw;
    }
    prepared[static_cast<size_t>(i)] = Prepared{};  // free its tensors and kernels
  }
  for (std::thread& t : pool) t.join();
}

struct Stats {
  int programs = 0, failed = 0, kernels = 0, outputs = 0, oracle_skipped = 0, ill_conditioned = 0,
      overflow_masked = 0;
};

// `got` (one output list per plan of kPlans) against p's references by the
// rules at the top; "" when every output passes.
std::string compare_outputs(const Prepared& p, const std::vector<std::vector<Tensor>>& got,
                            Stats& st) {
  const Graph& g = *p.graph;
  for (const std::vector<Tensor>& outs : got)
    if (outs.size() != p.eager.size())
      return header(p.seed, &g) + "the GPU gave " + std::to_string(outs.size()) +
             " outputs, the reference " + std::to_string(p.eager.size()) + "\n";
  std::string report;
  char buf[320];
  for (size_t i = 0; i < p.eager.size(); ++i) {
    ++st.outputs;
    const double tol = cone_tolerance(g, g.outputs()[i]);
    const bool finite = gputest::all_finite(p.eager[i]);
    const double e_ref = finite ? relative_error(p.eager[i], p.oracle[i]) : 0;
    const bool conditioned = finite && e_ref <= tol;
    st.oracle_skipped += !finite;
    st.ill_conditioned += finite && !conditioned;
    for (size_t k = 0; k < got.size(); ++k) {
      const Tensor& out = got[k][i];
      const double e_eager = relative_error(out, p.eager[i]);
      const double e_oracle = finite ? relative_error(out, p.oracle[i]) : 0;
      bool ok;
      if (conditioned) {
        ok = e_oracle <= tol && e_eager <= 2 * tol;
      } else if (finite) {
        ok = e_eager <= tol || e_oracle <= e_ref + tol;
      } else {
        ok = e_eager <= tol;
        std::string overflow_why;
        if (!ok && matches_overflowed(out, p.eager[i], p.oracle[i], tol, &overflow_why)) {
          ok = true;
          ++st.overflow_masked;
        }
        if (!ok) report += "  where eager overflowed: " + overflow_why + "\n";
      }
      if (!ok) {
        std::snprintf(buf, sizeof buf,
                      "%s plan, output %zu (%s %s): vs f64 oracle %.3g, vs eager %.3g "
                      "(tolerance %.0e; eager vs oracle %.3g%s; %lld NaN elements)\n",
                      std::string(plan_kind_name(kPlans[k])).c_str(), i,
                      std::string(dtype_name(out.dtype())).c_str(),
                      shape_to_string(out.shape()).c_str(), e_oracle, e_eager, tol, e_ref,
                      finite ? "" : ", eager overflowed",
                      static_cast<long long>(gputest::count_nan(out)));
        report += buf;
      }
    }
    if (conditioned && got.size() == 2) {
      const double e_plans = relative_error(got[0][i], got[1][i]);
      if (!(e_plans <= 2 * tol)) {
        std::snprintf(buf, sizeof buf, "output %zu: fused vs unfused %.3g (tolerance 2 x %.0e)\n",
                      i, e_plans, tol);
        report += buf;
      }
    }
  }
  return report.empty() ? "" : header(p.seed, &g) + report;
}

// Runs both plans of `p` on the GPU and compares; "" when the program passes.
std::string check_on_gpu(const Prepared& p, cuda::Device& dev, Stats& st) {
  const Graph& g = *p.graph;
  std::vector<std::vector<Tensor>> got;
  for (size_t k = 0; k < p.compiled.size(); ++k) {
    try {
      driver::CudaProgram program(p.compiled[k], dev);
      got.push_back(program.run(p.inputs, /*poison=*/true));
    } catch (const std::exception& e) {
      return header(p.seed, &g) + std::string(plan_kind_name(kPlans[k])) +
             " plan threw on the GPU: " + e.what() + "\n" + to_string(g, p.compiled[k].plan);
    }
  }
  return compare_outputs(p, got, st);
}

TEST(GpuProperty, RandomProgramsFusedAndUnfused) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = driver::default_device();
  const std::optional<tir::Target> target = gputest::device_target();
  ASSERT_TRUE(target.has_value()) << dev.name() << " is " << dev.arch();
  const uint64_t base = gputest::fresh_seed();
  const int count = static_cast<int>(
      gputest::env_u64("TILEFUSE_GPU_PROPERTY_COUNT").value_or(static_cast<uint64_t>(kPrograms)));
  const int workers = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 2u, 16u));
  std::printf(
      "GPU property test on %s (%s): %d programs, seeds %llu.. "
      "(TILEFUSE_GPU_SEED=%llu reproduces this run), %d compile threads\n",
      dev.name().c_str(), dev.arch().c_str(), count, static_cast<unsigned long long>(base),
      static_cast<unsigned long long>(base), workers);
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();

  Stats st;
  int reported = 0;
  for_each_prepared(count, base, *target, workers, [&](Prepared& p) {
    std::string failure = p.failure;
    if (failure.empty()) {
      try {
        dev.make_current();
        failure = check_on_gpu(p, dev, st);
      } catch (const std::exception& e) {
        failure = header(p.seed, &*p.graph) + "checking threw: " + e.what() + "\n";
      }
    }
    ++st.programs;
    st.kernels += p.kernels;
    if (failure.empty()) return;
    ++st.failed;
    if (reported++ < 5) ADD_FAILURE() << failure;
  });

  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "GPU property test: %d programs (%d kernels) in %.1f s, %d failed; of %d outputs, %d "
      "overflowed in eager (%d held to eager on the finite elements only) and %d had eager "
      "itself beyond tolerance of the oracle\n",
      st.programs, st.kernels, secs, st.failed, st.outputs, st.oracle_skipped, st.overflow_masked,
      st.ill_conditioned);
  EXPECT_EQ(st.failed, 0) << "of " << st.programs << " programs (TILEFUSE_GPU_SEED=" << base << ")";
}

}  // namespace
}  // namespace tilefuse
