// The driver's compile and execute steps: the pass table runs on every
// kernel (with licm's and lower_copies' reports kept), --dump-after names
// are checked up front, and execute binds memory by the plan's contract so
// that both plans match the reference evaluator.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/reference_error.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "driver/execute.h"
#include "frontend/frontend.h"
#include "reference/eval.h"
#include "reference/inputs.h"
#include "tir/functor.h"
#include "tir/printer.h"

namespace tilefuse {
namespace {

Program parse(const std::string& source) {
  return parse_program(source, "test.tfs");
}

TEST(DriverCompile, PassOrderPutsLicmAfterCseAndCopiesAfterLicm) {
  const std::vector<std::string> names = driver::pass_names(tir::Target::cpu());
  auto at = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) - names.begin();
  };
  ASSERT_LT(at("simplify"), static_cast<long>(names.size()));
  EXPECT_LT(at("simplify"), at("cse"));
  EXPECT_EQ(at("licm"), at("cse") + 1);
  EXPECT_EQ(at("dce"), at("licm") + 1);
  EXPECT_EQ(at("lower_copies"), static_cast<long>(names.size()) - 2);
  EXPECT_EQ(at("pack_gemm_operands"), static_cast<long>(names.size()) - 1);
}

TEST(DriverCompile, CudaPassTableFollowsTheTargetIndependentOne) {
  const std::vector<std::string> names = driver::pass_names(*tir::Target::parse("sm_90a"));
  const std::vector<std::string> want = {"simplify", "cse", "licm", "dce",
                                         "lower_gemm", "warp_specialize", "lower_copies",
                                         "pipeline", "hoist_copy_addresses", "persistent",
                                         "prefetch_prologue", "cluster", "producer_start",
                                         "register_a", "register_budgets",
                                         "layout", "epilogue", "split_tail", "split_k_cluster", "sync",
                                         "timeline"};
  EXPECT_EQ(names, want);
}

// Every bounds check reaches the compiled kernel with the place of its gather
// in the program (the run-time error's file:line:col): no pass of any
// pipeline drops the location.
TEST(DriverCompile, BoundsChecksKeepTheirSourceLocationThroughEveryPass) {
  const Program p = parse(
      "def f(x: f16[70, 48], y: f16[48, 40], index: i64[50], j: i64[40]):\n"
      "    h = x[index] @ y\n"
      "    return torch.index_select(h, 1, j) + 1.0\n");
  struct Checks : tir::IRVisitor {
    std::vector<SourceLoc> locs;
    void visit(const tir::CheckNode* op) override {
      locs.push_back(op->loc);
      tir::IRVisitor::visit(op);
    }
  };
  for (const char* target : {"cpu", "sm_80", "sm_90a"})
    for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
      driver::CompileOptions o;
      o.target = *tir::Target::parse(target);
      o.plan = plan;
      const driver::CompiledProgram c = driver::compile(p.graph, o);
      std::set<int> lines;
      for (const driver::CompiledKernel& k : c.kernels) {
        Checks checks;
        checks.visit_stmt(k.kernel.body);
        for (const SourceLoc& l : checks.locs) {
          EXPECT_TRUE(l.valid()) << target << " " << plan_kind_name(plan) << " " << k.kernel.name;
          lines.insert(l.line);
        }
        if (k.cuda) {
          for (const codegen::CudaCheck& cc : k.cuda->checks) EXPECT_TRUE(cc.loc.valid());
        }
      }
      // The gather on line 2 and the index_select on line 3 are both checked.
      EXPECT_EQ(lines, (std::set<int>{2, 3})) << target << " " << plan_kind_name(plan);
    }
}

// TMA names a tile by signed 32-bit coordinates (PTX cp.async.bulk.tensor's
// tensorCoords are .s32), while a tensor may have 2^40 elements: a dim past
// 2^31 cannot be a tensor map's, or the kernel casts the tile's origin (or a
// gathered row's index) to int and reads the wrapped, zero-filled rows, a
// silent wrong result. Such an operand goes by cp.async with 64-bit
// addresses, the copy's reason says why, and the other operand, which fits,
// still goes by TMA.
TEST(DriverCompile, NoTensorMapOverADimPastTmaCoordinates) {
  struct Case {
    const char* source;
    bool tma_row_gather;
    const char* big;  // the shared tile the oversized operand feeds
  };
  const Case cases[] = {
      {"def f(a: f16[2147483648, 256], b: f16[256, 128]):\n    return a @ b\n", false, "A"},
      {"def f(a: f16[128, 256], b: f16[256, 2147483648]):\n    return a @ b\n", false, "B"},
      {"def f(x: f16[2147483648, 128], idx: i64[256], w: f16[128, 128]):\n"
       "    return x[idx] @ w\n",
       true, "A"},
  };
  for (const Case& c : cases) {
    const Program p = parse(c.source);
    driver::CompileOptions o;
    o.target = *tir::Target::parse("sm_90a");
    o.plan = PlanKind::kFused;
    o.cuda.tma_row_gather = c.tma_row_gather;
    const driver::CompiledProgram compiled = driver::compile(p.graph, o);
    ASSERT_EQ(compiled.kernels.size(), 1u) << c.source;
    const driver::CompiledKernel& k = compiled.kernels[0];
    ASSERT_TRUE(k.cuda.has_value());
    size_t maps = 0;
    for (const tir::TensorMapPlan& m : k.kernel.launch.tensor_maps) {
      ++maps;
      for (int64_t d : m.dims) EXPECT_LT(d, int64_t{1} << 31) << c.source;
    }
    EXPECT_GE(maps, 1u) << "the operand that fits still goes by TMA: " << c.source;
    bool found = false;
    for (const passes::CopyDecision& d : k.copies.copies) {
      if (d.operand != c.big || d.role != "tile") continue;
      found = true;
      EXPECT_EQ(d.mode, "cp_async") << c.source;
      // (A gathered tile's reason is the affine form's: "not TMA: gather".)
      if (!c.tma_row_gather) {
        EXPECT_NE(d.reason.find("TMA coordinates are 32-bit"), std::string::npos) << d.reason;
      }
    }
    EXPECT_TRUE(found) << c.source;
    // Its addresses are 64-bit, and no coordinate is cast down from one.
    EXPECT_EQ(k.cuda->source.find("static_cast<int>((static_cast<long long>"), std::string::npos)
        << k.cuda->source;
    EXPECT_EQ(k.cuda->source.find("static_cast<int>(idx_rows"), std::string::npos)
        << k.cuda->source;
  }
}

TEST(DriverCompile, KeepsTheLoweredKernelAndTheReports) {
  const Program p = parse(
      "def f(x: f16[70, 48], y: f16[48, 40], index: i64[70]):\n"
      "    return x[index] @ y\n");
  driver::CompileOptions o;
  o.target = *tir::Target::parse("sm_80");
  const driver::CompiledProgram c = driver::compile(p.graph, o);
  ASSERT_EQ(c.kernels.size(), 1u);
  const driver::CompiledKernel& k = c.kernels[0];
  EXPECT_EQ(k.lowered.step.kind, StepKind::kGemm);
  EXPECT_FALSE(k.licm.hoisted.empty());
  ASSERT_GE(k.copies.copies.size(), 2u);
  // The optimized kernel carries the decisions the report lists.
  const std::string text = tir::print(k.kernel);
  EXPECT_NE(text.find("plan(cp_async, width="), std::string::npos) << text;
  EXPECT_EQ(tir::print(k.lowered.kernel).find("plan("), std::string::npos);

  o.optimize = false;
  const driver::CompiledProgram raw = driver::compile(p.graph, o);
  EXPECT_EQ(tir::print(raw.kernels[0].kernel), tir::print(raw.kernels[0].lowered.kernel));
  EXPECT_TRUE(raw.kernels[0].licm.hoisted.empty());
}

// A plain GEMM's two plans compile to the same kernels (bench times them
// once); a gathered GEMM's do not (the unfused plan materializes x[index]),
// nor do one plan's kernels for two targets or two configs.
TEST(DriverCompile, SameKernelsWhereThePlansHaveTheSameSteps) {
  const Program plain = parse(
      "def f(x: f16[70, 48], y: f16[48, 40]):\n"
      "    return x @ y\n");
  const Program gathered = parse(
      "def f(x: f16[70, 48], y: f16[48, 40], index: i64[70]):\n"
      "    return x[index] @ y\n");
  for (const char* target : {"cpu", "sm_80", "sm_90a"}) {
    SCOPED_TRACE(target);
    driver::CompileOptions fused, unfused;
    fused.target = unfused.target = *tir::Target::parse(target);
    unfused.plan = PlanKind::kUnfused;
    EXPECT_TRUE(driver::same_kernels(driver::compile(plain.graph, fused),
                                     driver::compile(plain.graph, unfused)));
    const driver::CompiledProgram f = driver::compile(gathered.graph, fused);
    const driver::CompiledProgram u = driver::compile(gathered.graph, unfused);
    EXPECT_EQ(u.kernels.size(), 2u);
    EXPECT_FALSE(driver::same_kernels(f, u));
    EXPECT_TRUE(driver::same_kernels(f, f));
  }
  driver::CompileOptions a, b;
  a.target = *tir::Target::parse("sm_80");
  b.target = *tir::Target::parse("sm_90a");
  EXPECT_FALSE(
      driver::same_kernels(driver::compile(plain.graph, a), driver::compile(plain.graph, b)));
  b.target = a.target;
  b.lower.gemm_config = GemmConfig{64, 64, 32, 2, 4, 8};
  EXPECT_FALSE(
      driver::same_kernels(driver::compile(plain.graph, a), driver::compile(plain.graph, b)));
}

// bench's rows read one device copy of the inputs (DeviceInputs): the host
// path's address tables of the fused and unfused plans, bound to the same
// input addresses, give every parameter (a returned one included, which
// outputs() reads there) that address, and every step output its own,
// none an input's; counts that are not the program's are refused.
TEST(DriverCompile, HostValueAddressesShareTheInputsAndNotTheOutputs) {
  const Program p = parse(
      "def f(x: f16[70, 48], y: f16[48, 40], index: i64[70]):\n"
      "    return x[index] @ y, y\n");
  const std::vector<cuda::CUdeviceptr> inputs = {0x1000, 0x2000, 0x3000};
  std::map<PlanKind, std::vector<cuda::CUdeviceptr>> tables;
  cuda::CUdeviceptr next = 0x10000;
  for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
    SCOPED_TRACE(plan_kind_name(plan));
    driver::CompileOptions o;
    o.target = *tir::Target::parse("sm_90a");
    o.plan = plan;
    const driver::CompiledProgram c = driver::compile(p.graph, o);
    ASSERT_EQ(c.kernels.size(), plan == PlanKind::kFused ? 1u : 2u);
    std::vector<cuda::CUdeviceptr> steps;
    for (size_t k = 0; k < c.kernels.size(); ++k) steps.push_back(next += 0x1000);
    const std::vector<cuda::CUdeviceptr> where = driver::host_value_addresses(c, inputs, steps);
    ASSERT_EQ(where.size(), static_cast<size_t>(p.graph.size()));
    for (size_t i = 0; i < inputs.size(); ++i)
      EXPECT_EQ(where[static_cast<size_t>(p.graph.parameters()[i])], inputs[i]) << i;
    EXPECT_EQ(where[static_cast<size_t>(p.graph.outputs()[1])], inputs[1]);  // y, returned
    for (size_t k = 0; k < c.kernels.size(); ++k) {
      const cuda::CUdeviceptr out = where[static_cast<size_t>(c.kernels[k].lowered.step.output)];
      EXPECT_EQ(out, steps[k]) << k;
      EXPECT_EQ(std::count(inputs.begin(), inputs.end(), out), 0) << k;
    }
    tables[plan] = where;
    EXPECT_THROW(driver::host_value_addresses(c, {0x1000, 0x2000}, steps), InternalError);
    EXPECT_THROW(driver::host_value_addresses(c, inputs, {}), InternalError);
  }
  for (ValueId v : p.graph.parameters())
    EXPECT_EQ(tables[PlanKind::kFused][static_cast<size_t>(v)],
              tables[PlanKind::kUnfused][static_cast<size_t>(v)]);
}

// On the CPU a copy is direct, or, a gemm operand staged from a plain
// source, packed by the gemm from there (the report says which).
TEST(DriverCompile, CpuCopiesAreDirectOrPackedByTheGemm) {
  const Program p = parse("def f(x: f32[20, 9], w: f32[9, 30]):\n    return x @ w\n");
  const driver::CompiledProgram c = driver::compile(p.graph);
  ASSERT_EQ(c.kernels.size(), 1u);
  ASSERT_EQ(c.kernels[0].copies.copies.size(), 2u);
  for (const passes::CopyDecision& d : c.kernels[0].copies.copies) EXPECT_EQ(d.mode, "gemm_pack");
  const Program g = parse(
      "def f(x: f16[70, 45], y: f16[45, 33], index: i64[70]):\n    return x[index] @ y\n");
  std::map<std::string, std::string> mode;
  const driver::CompiledProgram gc = driver::compile(g.graph);
  for (const passes::CopyDecision& d : gc.kernels[0].copies.copies) mode[d.dst] = d.mode;
  EXPECT_EQ(mode, (std::map<std::string, std::string>{{"A_s", "gemm_pack"}, {"B_s", "gemm_pack"}}));
  // With a K loop, the gathered rows are computed once before it (licm):
  // those copies stay direct.
  const Program loop = parse(
      "def f(x: f16[70, 1000], y: f16[1000, 33], index: i64[70]):\n    return x[index] @ y\n");
  const driver::CompiledProgram lc = driver::compile(loop.graph);
  mode.clear();
  for (const passes::CopyDecision& d : lc.kernels[0].copies.copies) mode[d.dst] = d.mode;
  EXPECT_EQ(mode, (std::map<std::string, std::string>{{"A_s", "gemm_pack"},
                                                      {"B_s", "gemm_pack"},
                                                      {"index_ok", "direct"},
                                                      {"index_rows", "direct"}}));
}

TEST(DriverCompile, DumpAfterPrintsThatPassAndRejectsUnknownNames) {
  const Program p = parse("def f(x: f32[20, 9], w: f32[9, 30]):\n    return x @ w\n");
  std::ostringstream dump;
  driver::CompileOptions o;
  o.dump_after = "licm";
  o.dump = &dump;
  driver::compile(p.graph, o);
  EXPECT_NE(dump.str().find("# after licm\nkernel gemm0("), std::string::npos) << dump.str();
  EXPECT_EQ(dump.str().find("# after cse"), std::string::npos);

  // Checked before anything is compiled, also for a program with no kernel.
  const Program id = parse("def f(x: f32[3]):\n    return x\n");
  o.dump_after = "licn";
  try {
    driver::compile(id.graph, o);
    ADD_FAILURE() << "no error for an unknown pass";
  } catch (const UserError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'licn'"), std::string::npos) << msg;
    for (const std::string& n : driver::pass_names(o.target))
      EXPECT_NE(msg.find(n), std::string::npos) << msg;
  }
}

// `p` compiled for the CPU with plan `kind` and run on `inputs`, its outputs
// poisoned (NaN) before the run.
std::vector<Tensor> execute_poisoned(const Program& p, const std::vector<Tensor>& inputs,
                                     PlanKind kind) {
  driver::CompileOptions o;
  o.plan = kind;
  driver::ExecuteOptions x;
  x.poison_outputs = true;
  return driver::execute(driver::compile(p.graph, o), inputs, x);
}

TEST(DriverExecute, BothPlansMatchTheReference) {
  for (const char* src : {
           "def f(x: f16[70, 45], y: f16[45, 33], index: i64[70] in [-70, 70)):\n"
           "    return torch.relu(x[index] @ y)\n",
           "def f(x: f32[20, 9], w: f32[9, 30], b: f32[30], i: i32[12] in [0, 20)):\n"
           "    return torch.addmm(b, torch.sigmoid(x[i]) * 2, w)\n",
           "def f(x: bf16[2, 17, 8], idx: i64[5] in [0, 17), w: bf16[2, 8, 19]):\n"
           "    h = torch.bmm(x[:, idx], w).float() + 1\n"
           "    return h, torch.relu(h)\n",
       }) {
    const Program p = parse(src);
    const std::vector<Tensor> inputs = make_random_inputs(p.graph, 11);
    const std::vector<Tensor> expected = evaluate(p.graph, inputs);
    for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
      const std::vector<Tensor> got = execute_poisoned(p, inputs, kind);
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_LE(relative_error(got[i], expected[i]), 3e-2) << src << plan_kind_name(kind);
    }
  }
}

// An empty slice with a step past 2^31 (valid PyTorch: `x[:, 4::2**62]` is
// [1, 0]) reads nothing; its step must not reach the kernel as an i32
// constant (it was an internal error, "constant does not fit i32", exit 2).
TEST(DriverExecute, EmptySlicesWithHugeStepsCompileAndRun) {
  for (const char* src : {
           "def f(x: f32[1, 4]):\n"
           "    return x[9223372036854775807:-9223372036854775808:9223372036854775807]\n",
           "def f(x: f32[1, 4]):\n    return x[:, 5::9223372036854775807] * 2.0\n",
           "def f(x: f32[3, 4]):\n    return x[:, 3:0:4611686018427387904] + 1.0, x[2:, 1:]\n",
           "def f(x: f32[6, 4], w: f32[4, 5]):\n"
           "    return torch.relu(x[6::2147483648] * 2.0) @ w, x[:, 4::2147483648] @ w[:0]\n",
       }) {
    const Program p = parse(src);
    const std::vector<Tensor> inputs = make_random_inputs(p.graph, 5);
    const std::vector<Tensor> expected = evaluate(p.graph, inputs);
    for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
      std::vector<Tensor> got;
      ASSERT_NO_THROW(got = execute_poisoned(p, inputs, kind)) << src << plan_kind_name(kind);
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].shape(), expected[i].shape()) << src;
        EXPECT_EQ(relative_error(got[i], expected[i]), 0.0) << src << plan_kind_name(kind);
      }
    }
  }
}

TEST(DriverExecute, AReturnedParameterIsACopy) {
  const Program p = parse("def f(x: f32[3], w: f32[3, 2]):\n    return x, x @ w\n");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, 3);
  const std::vector<Tensor> got = driver::execute(driver::compile(p.graph), inputs);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(relative_error(got[0], inputs[0]), 0.0);
  EXPECT_NE(got[0].data_ptr(), inputs[0].data_ptr());
  EXPECT_LE(relative_error(got[1], evaluate(p.graph, inputs)[1]), 1e-5);
}

TEST(DriverExecute, OutOfRangeIndexIsTheReferencesUserError) {
  const Program p = parse(
      "def f(x: f32[6, 5], w: f32[5, 3], i: i64[4] in [6, 7)):\n"
      "    return x[i] @ w\n");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, 1);
  std::string expected;
  try {
    evaluate(p.graph, inputs);
  } catch (const UserError& e) {
    expected = e.what();
  }
  ASSERT_FALSE(expected.empty());
  for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
    driver::CompileOptions o;
    o.plan = kind;
    try {
      driver::execute(driver::compile(p.graph, o), inputs);
      ADD_FAILURE() << "no error from the " << plan_kind_name(kind) << " plan";
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), expected) << plan_kind_name(kind);
    }
  }
}

// Where two gathers both have an index out of range, the error is the first
// one's in program order, as in PyTorch and the reference. The fused plan runs
// `x[i * 2] @ w` first (the other GEMM's epilogue adds its result), and its
// kernel's error named the later gather (`(the result of mul)[0] = 12` at
// 2:25), where the reference and the unfused plan name `i`[0] = 6 at 2:14.
TEST(DriverExecute, OfTwoBadGathersTheFirstInProgramOrderIsReported) {
  for (const char* src : {
           "def f(x: f32[6, 5], w: f32[5, 3], i: i64[4] in [6, 7)):\n"
           "    return x[i] @ w + x[i * 2] @ w\n",
           "def f(x: f32[6, 5], w: f32[5, 3], i: i32[4] in [6, 7)):\n"
           "    return x.index_select(0, i) @ w + x[i + 0] @ w\n",
           "def f(x: f32[6, 5], w: f32[5, 3], i: i64[4] in [6, 7), j: i64[4] in [-9, -8)):\n"
           "    return torch.relu(x[i] @ w) + x[j] @ w[:, :1]\n",
       }) {
    const Program p = parse(src);
    const std::vector<Tensor> inputs = make_random_inputs(p.graph, 1);
    const std::optional<testing::ReferenceError> expected =
        testing::reference_error_of(p.graph, inputs);
    ASSERT_TRUE(expected.has_value()) << src;
    for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
      driver::CompileOptions o;
      o.plan = kind;
      for (int threads : {1, 3}) {
        driver::ExecuteOptions x;
        x.num_threads = threads;
        try {
          driver::execute(driver::compile(p.graph, o), inputs, x);
          ADD_FAILURE() << "no error from the " << plan_kind_name(kind) << " plan\n" << src;
        } catch (const UserError& e) {
          EXPECT_EQ(std::string(e.what()), expected->message) << plan_kind_name(kind) << "\n" << src;
          EXPECT_EQ(e.loc().line, expected->loc.line) << plan_kind_name(kind) << "\n" << src;
          EXPECT_EQ(e.loc().col, expected->loc.col) << plan_kind_name(kind) << "\n" << src;
          EXPECT_EQ(e.kind(), ErrorKind::kIndex);
        }
      }
    }
  }
}

TEST(DriverExecute, RejectsInputsThatDoNotMatchTheParameters) {
  const Program p = parse("def f(x: f32[20, 9], w: f32[9, 30]):\n    return x @ w\n");
  const driver::CompiledProgram c = driver::compile(p.graph);
  EXPECT_THROW(driver::execute(c, {Tensor::full(DType::F32, {20, 9}, 1)}), UserError);
  EXPECT_THROW(driver::execute(
                   c, {Tensor::full(DType::F32, {20, 9}, 1), Tensor::full(DType::F16, {9, 30}, 1)}),
               UserError);
  driver::CompileOptions gpu;
  gpu.target = *tir::Target::parse("sm_90a");
  EXPECT_THROW(
      driver::execute(driver::compile(p.graph, gpu),
                      {Tensor::full(DType::F32, {20, 9}, 1), Tensor::full(DType::F32, {9, 30}, 1)}),
      InternalError);
}

// An override source's own dynamic shared memory: its directive line, or
// nothing (the emitted kernel's); a malformed count is a user error.
TEST(DebugAids, OverrideSourceMaySetItsDynamicSharedBytes) {
  EXPECT_FALSE(driver::override_dynamic_shared_bytes("__global__ void k() {}").has_value());
  EXPECT_EQ(
      driver::override_dynamic_shared_bytes(
          "// gemm0\n// tilefuse-override: dynamic_shared_bytes=166912\n__global__ void k() {}"),
      166912);
  EXPECT_EQ(
      driver::override_dynamic_shared_bytes("// tilefuse-override: dynamic_shared_bytes=0 \r\n"),
      0);
  for (const char* bad : {"// tilefuse-override: dynamic_shared_bytes=\n",
                          "// tilefuse-override: dynamic_shared_bytes=-1",
                          "// tilefuse-override: dynamic_shared_bytes=12k",
                          "// tilefuse-override: dynamic_shared_bytes=4294967296"})
    EXPECT_THROW(driver::override_dynamic_shared_bytes(bad), UserError) << bad;
}

// The debugging aids' files (GPU runs only, so tested here directly): an
// override that is a FIFO hung the compile, one that is a directory compiled
// an empty source, and a TILEFUSE_DUMP_CUBIN that is a file threw a
// filesystem_error (an internal error, exit 2).
TEST(DebugAids, OverrideSourceAndDumpCubinRefuseBadPathsClearly) {
  namespace fs = std::filesystem;
  char tmpl[] = "/tmp/tilefuse-aids-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  EXPECT_FALSE(driver::read_override_source(dir.string(), "k").has_value());
  EXPECT_FALSE(driver::read_override_source((dir / "nodir").string(), "k").has_value());
  { std::ofstream(dir / "k.cu") << "__global__ void k() {}"; }
  EXPECT_EQ(driver::read_override_source(dir.string(), "k").value(), "__global__ void k() {}");
  ASSERT_EQ(::mkfifo((dir / "f.cu").c_str(), 0600), 0);
  EXPECT_THROW(driver::read_override_source(dir.string(), "f"), UserError);
  fs::create_directory(dir / "d.cu");
  EXPECT_THROW(driver::read_override_source(dir.string(), "d"), UserError);
  ::truncate((dir / "k.cu").c_str(), off_t{1} << 30);  // sparse 1 GiB
  EXPECT_THROW(driver::read_override_source(dir.string(), "k"), UserError);

  driver::dump_kernel_files((dir / "dump").string(), "k", "src", std::string_view("\0b", 2));
  EXPECT_EQ(fs::file_size(dir / "dump" / "k.cubin"), 2u);
  EXPECT_THROW(driver::dump_kernel_files((dir / "k.cu").string(), "k", "s", "c"), UserError);
  EXPECT_THROW(driver::dump_kernel_files((dir / "k.cu" / "x").string(), "k", "s", "c"), UserError);
  fs::remove(dir / "dump" / "k.cu");
  fs::create_directory(dir / "dump" / "k.cu");  // a directory where the file goes
  EXPECT_THROW(driver::dump_kernel_files((dir / "dump").string(), "k", "s", "c"), UserError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tilefuse
