// The issue-3 property test: 500 random programs (tests/common/
// random_program.h with every option on: prologue chains of casts,
// elementwise ops, gathers with negative indices, slices, transposes and
// broadcasts on either operand; epilogues of biases, activations, scalings
// and casts; M, N, K in [0, 300] with 0 and 1 drawn often; f16, bf16, f32).
// For each program, both plans are compiled as the CLI compiles them
// (driver::compile: lowered, then the pass table with licm and the cpu copy
// decision) and run on the CPU executor (driver::execute) with every step's
// output poisoned first; every output must agree with
//   - the f64 oracle (no intermediate rounding),
//   - the eager reference (the same rounding points; only the GEMM's
//     summation order may differ), and
//   - the other plan,
// by ‖out − ref‖/‖ref‖ within the tolerance of the least precise floating
// dtype the output depends on: 1e-2 for f16/bf16, 1e-5 for f32 (an f32
// output computed through an f16 cast carries f16 error). The oracle check
// is dropped for an output whose eager reference itself overflowed or is
// beyond tolerance of the oracle (counted and printed; the plans are then
// held to the eager result), and such outputs must stay under 5%.
//
// Seeds are fresh per run (from the clock, printed); to reproduce a run or
// one program:
//   TILEFUSE_PROPERTY_SEED=<seed> [TILEFUSE_PROPERTY_COUNT=1]
//     build/tests/test_lower --gtest_filter='LowerProperty.*'
// Program i of a run uses seed base + i, so a failure's own seed with
// COUNT=1 reruns just that program.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "common/random_program.h"
#include "common/tolerance.h"
#include "driver/compile.h"
#include "driver/execute.h"
#include "lower_test_util.h"
#include "reference/eval.h"
#include "reference/inputs.h"

namespace tilefuse {
namespace {

constexpr int kPrograms = 500;

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* s = std::getenv(name);
  return s && *s ? std::stoull(s, nullptr, 0) : fallback;
}

// Both plans as the CLI runs them: driver::compile (plan, lower, the pass
// table with licm and lower_copies) and driver::execute with every step's
// output poisoned first.
std::vector<Tensor> run_compiled(const Graph& g, PlanKind kind, const std::vector<Tensor>& inputs) {
  driver::CompileOptions co;
  co.plan = kind;
  driver::ExecuteOptions eo;
  eo.num_threads = 2;
  eo.poison_outputs = true;
  return driver::execute(driver::compile(g, co), inputs, eo);
}

using testing::all_finite;
using testing::cone_tolerance;

struct Stats {
  int programs = 0, failed = 0, gemms = 0, empty_gemms = 0, unit_gemms = 0, gathers = 0,
      negative_ranges = 0, fused_prologue_ops = 0, fused_epilogue_ops = 0,
      oracle_skipped_outputs = 0, ill_conditioned_outputs = 0, outputs = 0;
  int64_t max_m = 0, max_n = 0, max_k = 0;
  std::map<DType, int> dtypes;
};

// One program; returns the failure report ("" when it passes).
std::string check_program(uint64_t seed, Stats& st) {
  testing::RandomProgramOptions opts;
  opts.max_dim = 300;
  opts.edge_dim_chance = 0.2;
  opts.negative_index_chance = 0.5;
  opts.more_epilogues = true;
  const Graph g = testing::RandomProgram(seed, opts).build();
  const std::string header = "seed " + std::to_string(seed) +
                             " (rerun: TILEFUSE_PROPERTY_SEED=" + std::to_string(seed) +
                             " TILEFUSE_PROPERTY_COUNT=1)\nprogram:\n" + g.to_string();
  for (ValueId p : g.parameters()) {
    const Node& n = g.node(p);
    if (n.range && n.range->lo < 0) ++st.negative_ranges;
  }
  for (ValueId v = 0; v < g.size(); ++v) st.gathers += g.node(v).kind == OpKind::Index;

  const std::vector<Tensor> inputs = make_random_inputs(g, seed);
  EvalOptions eager_opts, oracle_opts;
  eager_opts.num_threads = 2;
  oracle_opts.num_threads = 2;
  oracle_opts.mode = EvalMode::kOracle;
  std::vector<Tensor> eager, oracle;
  try {
    eager = evaluate(g, inputs, eager_opts);
    oracle = evaluate(g, inputs, oracle_opts);
  } catch (const std::exception& e) {
    return header + "reference evaluator threw: " + e.what() + "\n";
  }

  std::map<PlanKind, std::vector<Tensor>> got;
  std::string report;
  for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
    const Plan plan = build_plan(g, kind);
    if (kind == PlanKind::kFused) {
      for (const KernelStep& s : plan.steps) {
        if (s.kind != StepKind::kGemm) continue;
        ++st.gemms;
        st.empty_gemms += s.gemm.m == 0 || s.gemm.n == 0 || s.gemm.k == 0;
        st.unit_gemms += s.gemm.m == 1 || s.gemm.n == 1 || s.gemm.k == 1;
        st.max_m = std::max(st.max_m, s.gemm.m);
        st.max_n = std::max(st.max_n, s.gemm.n);
        st.max_k = std::max(st.max_k, s.gemm.k);
        st.fused_prologue_ops += static_cast<int>(s.a.nodes.size() + s.b.nodes.size());
        st.fused_epilogue_ops += static_cast<int>(s.epilogue.size());
        st.dtypes[g.node(s.output).dtype]++;
      }
    }
    try {
      got[kind] = run_compiled(g, kind, inputs);
    } catch (const std::exception& e) {
      return header + std::string(plan_kind_name(kind)) + " plan threw: " + e.what() + "\n" +
             to_string(g, plan);
    }
  }

  char buf[256];
  for (size_t i = 0; i < eager.size(); ++i) {
    ++st.outputs;
    const double tol = cone_tolerance(g, g.outputs()[i]);
    // The oracle never overflows or rounds: an output the eager reference
    // itself overflowed has no meaningful oracle comparison; and where the
    // eager reference (the rounding contract the plans implement) is itself
    // farther than the tolerance from the oracle, the program is
    // ill-conditioned at its dtype (a bf16 chain, a `where` at a threshold
    // flipped by rounding or by f32 underflow), and the plans are held to
    // the eager result instead (they must still match it within tolerance).
    const bool finite = all_finite(eager[i]);
    const double e_ref = finite ? relative_error(eager[i], oracle[i]) : 0;
    const bool conditioned = finite && e_ref <= tol;
    st.oracle_skipped_outputs += !finite;
    st.ill_conditioned_outputs += finite && !conditioned;
    for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
      const Tensor& out = got[kind][i];
      const double e_eager = relative_error(out, eager[i]);
      const double e_oracle = finite ? relative_error(out, oracle[i]) : 0;
      if (e_eager > tol || (conditioned && e_oracle > tol)) {
        std::snprintf(buf, sizeof buf,
                      "%s plan, output %zu (%s %s): vs f64 oracle %.3g, vs eager %.3g "
                      "(tolerance %.0e; eager vs oracle %.3g)\n",
                      std::string(plan_kind_name(kind)).c_str(), i,
                      std::string(dtype_name(out.dtype())).c_str(),
                      shape_to_string(out.shape()).c_str(), e_oracle, e_eager, tol, e_ref);
        report += buf;
      }
    }
    const double e_plans = relative_error(got[PlanKind::kFused][i], got[PlanKind::kUnfused][i]);
    if (e_plans > tol) {
      std::snprintf(buf, sizeof buf, "output %zu: fused vs unfused %.3g (tolerance %.0e)\n", i,
                    e_plans, tol);
      report += buf;
    }
  }
  return report.empty() ? "" : header + report;
}

TEST(LowerProperty, FusedUnfusedAndReferenceAgreeOn500RandomPrograms) {
  const uint64_t now =
      static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  const uint64_t base = env_u64("TILEFUSE_PROPERTY_SEED", now % 1000000007ULL);
  const int count = static_cast<int>(env_u64("TILEFUSE_PROPERTY_COUNT", kPrograms));
  std::printf(
      "property test: %d programs, seeds %llu.. (TILEFUSE_PROPERTY_SEED=%llu "
      "reproduces this run)\n",
      count, static_cast<unsigned long long>(base), static_cast<unsigned long long>(base));
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  Stats st;
  int reported = 0;
  for (int i = 0; i < count; ++i) {
    const uint64_t seed = base + static_cast<uint64_t>(i);
    const std::string failure = check_program(seed, st);
    ++st.programs;
    if (failure.empty()) continue;
    ++st.failed;
    if (reported++ < 5) ADD_FAILURE() << failure;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string dts;
  for (const auto& [dt, n] : st.dtypes) {
    dts += ' ';
    dts += dtype_name(dt);
    dts += ':';
    dts += std::to_string(n);
  }
  std::printf(
      "property test: %d programs in %.1f s, %d failed; %d GEMMs (%d with a 0 dim, %d with a 1 "
      "dim; max M %lld N %lld K %lld; output dtypes%s), %d gathers, %d negative index ranges, "
      "%d fused prologue ops, %d fused epilogue ops; of %d outputs, %d overflowed in eager and %d "
      "had eager itself beyond tolerance of the oracle (both held to eager only)\n",
      st.programs, secs, st.failed, st.gemms, st.empty_gemms, st.unit_gemms,
      static_cast<long long>(st.max_m), static_cast<long long>(st.max_n),
      static_cast<long long>(st.max_k), dts.c_str(), st.gathers, st.negative_ranges,
      st.fused_prologue_ops, st.fused_epilogue_ops, st.outputs, st.oracle_skipped_outputs,
      st.ill_conditioned_outputs);
  EXPECT_EQ(st.failed, 0) << "of " << st.programs << " programs (base seed " << base << ")";
  if (count >= kPrograms) {
    // The generator does reach what the issue asks for.
    EXPECT_GT(st.empty_gemms, count / 20);
    EXPECT_GT(st.unit_gemms, count / 20);
    EXPECT_GT(st.negative_ranges, count / 10);
    EXPECT_GT(st.fused_prologue_ops, count);
    EXPECT_GT(st.fused_epilogue_ops, count / 2);
    // The oracle comparison is not vacuous.
    EXPECT_LT(st.oracle_skipped_outputs + st.ill_conditioned_outputs, st.outputs / 20);
  }
}

}  // namespace
}  // namespace tilefuse
