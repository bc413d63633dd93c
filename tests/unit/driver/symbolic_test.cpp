// Symbolic dims end to end on the CPU executor: one compile per
// specialization serves every size in it (kernels take the symbols as
// arguments), results match the reference evaluator of the program bound
// to each size, and a mismatch between inputs names both tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "driver/execute.h"
#include "driver/specialize.h"
#include "frontend/frontend.h"
#include "reference/eval.h"
#include "reference/inputs.h"
#include "tir/printer.h"

namespace tilefuse {
namespace {

using driver::ArgDesc;
using driver::Binding;

// The seed with one symbolic dim: M gathered rows.
constexpr const char* kGather =
    "def gather_mm(x: f16[96, 64], y: f16[64, 48], index: i64[M] in [-96, 96)):\n"
    "    return x[index] @ y\n";

// Every kind of use: T in a gather's source, K a reduction, N broadcast
// against a bias of size 1, an epilogue and a second output.
constexpr const char* kMixed =
    "def mixed(x: f32[T, K], w: f32[K, N], b: f32[1, N], idx: i32[M] in [0, T)):\n"
    "    h = torch.relu(x[idx] @ w + b)\n"
    "    return h, (h * 2.0).to(torch.float16)\n";

// The message of the UserError `fn` throws ("" and a test failure when it
// throws none).
template <class Fn>
std::string user_error(Fn fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UserError";
  return "";
}

std::vector<ArgDesc> descs(const std::vector<Tensor>& ts) {
  std::vector<ArgDesc> out;
  for (const Tensor& t : ts) out.push_back(ArgDesc::of(t));
  return out;
}

// Runs `source` at `values` through kernels compiled from the generic graph
// (one compile per specialization key, counted in `compiles`) and checks
// every output against the reference evaluator of the bound program.
void run_at(const std::string& source, const SymbolValues& values, PlanKind plan,
            std::map<std::string, driver::CompiledProgram>& compiled, int* compiles,
            uint64_t seed) {
  const Program generic = parse_program(source, "p.tfs");
  const Program bound = parse_program(source, "p.tfs", &values);
  const std::vector<Tensor> inputs = make_random_inputs(bound.graph, seed);
  const Binding b = driver::bind_symbols(generic.graph, inputs);
  const Specialization spec = driver::specialize(generic.graph, b, descs(inputs));
  const std::string key = spec.key(generic.graph) + " " + std::string(plan_kind_name(plan)) +
                          " hints" + driver::binding_string(generic.graph, spec.size_hints);
  if (!compiled.count(key)) {
    driver::CompileOptions co;
    co.plan = plan;
    co.lower.specialization = spec;
    compiled.emplace(key, driver::compile(generic.graph, co));
    ++*compiles;
  }
  driver::ExecuteOptions xo;
  xo.poison_outputs = true;
  const std::vector<Tensor> outs = driver::execute(compiled.at(key), inputs, xo);
  const std::vector<Tensor> refs = evaluate(bound.graph, inputs);
  ASSERT_EQ(outs.size(), refs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    SCOPED_TRACE(driver::binding_string(generic.graph, b) + " output " + std::to_string(i));
    ASSERT_EQ(outs[i].shape(), refs[i].shape());
    EXPECT_LE(relative_error(outs[i], refs[i]), 1e-5);
  }
}

TEST(Symbolic, OneCompilePerSpecializationServesEverySize) {
  std::map<std::string, driver::CompiledProgram> compiled;
  int compiles = 0;
  uint64_t seed = 11;
  // M = 3, 5, 7 and 9 share one bucket class (< 16, not multiples of 16)
  // only up to their buckets (4, 8, 8, 16): the heuristic's BLOCK_M is 16
  // for all, but the key holds the hint, so count specializations.
  for (int64_t m : {5, 7, 100, 120, 1, 0, 33, 64})
    run_at(kGather, {{"M", m}}, PlanKind::kFused, compiled, &compiles, seed++);
  // 7 and 5 share bucket 8; 100 and 120 bucket 128; 64 is divisible by 16.
  EXPECT_EQ(compiles, 6);
}

TEST(Symbolic, MixedProgramBothPlansManySizes) {
  std::map<std::string, driver::CompiledProgram> compiled;
  int compiles = 0;
  uint64_t seed = 100;
  for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused})
    for (const SymbolValues& v : std::vector<SymbolValues>{{{"T", 40}, {"K", 32}, {"N", 24}, {"M", 17}},
                                                          {{"T", 1}, {"K", 3}, {"N", 1}, {"M", 5}},
                                                          {{"T", 70}, {"K", 0}, {"N", 9}, {"M", 2}},
                                                          {{"T", 9}, {"K", 48}, {"N", 80}, {"M", 0}}})
      run_at(kMixed, v, plan, compiled, &compiles, seed++);
  EXPECT_GT(compiles, 0);
}

// The kernels do not depend on the values the graph was built at: the
// generic graph and one bound to other sizes of the same specialization
// lower to the same Tile IR.
TEST(Symbolic, KernelsDoNotDependOnTheGraphsValues) {
  const Program generic = parse_program(kMixed, "p.tfs");
  const SymbolValues v = {{"T", 3}, {"K", 5}, {"N", 7}, {"M", 9}};
  const Program bound = parse_program(kMixed, "p.tfs", &v);
  Specialization spec;
  spec.divisible_by_16 = {false, true, false, false};
  spec.size_hints = {64, 32, 128, 16};
  for (bool index64 : {false, true}) {
    spec.index64 = index64;
    for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
      driver::CompileOptions co;
      co.plan = plan;
      co.lower.specialization = spec;
      const driver::CompiledProgram a = driver::compile(generic.graph, co);
      const driver::CompiledProgram b = driver::compile(bound.graph, co);
      ASSERT_EQ(a.kernels.size(), b.kernels.size());
      for (size_t i = 0; i < a.kernels.size(); ++i)
        EXPECT_EQ(tir::print(a.kernels[i].kernel), tir::print(b.kernels[i].kernel));
    }
  }
}

TEST(Symbolic, KernelsTakeTheSymbolsAsArguments) {
  const Program generic = parse_program(kGather, "p.tfs");
  Specialization spec;
  spec.divisible_by_16 = {true};
  spec.size_hints = {128};
  driver::CompileOptions co;
  co.lower.specialization = spec;
  // A GPU target: its heuristic's BLOCK_M follows M up to 128 (the CPU's
  // halves a small problem's tiles to 64 whatever M is).
  co.target = *tir::Target::parse("sm_80");
  const driver::CompiledProgram c = driver::compile(generic.graph, co);
  ASSERT_EQ(c.kernels.size(), 1u);
  const tir::Kernel& k = c.kernels[0].kernel;
  // x, y, index, the output, then M (i32: the runtime checked offsets fit).
  ASSERT_EQ(k.params.size(), 5u);
  EXPECT_FALSE(k.params[4].is_buffer());
  EXPECT_EQ(k.params[4].var.name(), "M");
  EXPECT_EQ(k.params[4].var.dtype(), DType::I32);
  EXPECT_EQ(std::get<int64_t>(k.attrs.at("M_divisibility")), 16);
  EXPECT_EQ(std::get<int64_t>(k.attrs.at("index_bits")), 32);
  // BLOCK_M from the hint (128), not from the graph's generic value.
  EXPECT_EQ(c.kernels[0].lowered.gemm_config->block_m, 128);
  const std::string text = tir::print(k);
  EXPECT_NE(text.find("index: global readonly i64[M]"), std::string::npos) << text;
  // The bound check's message reports the indexed dim's fixed size.
  EXPECT_NE(text.find("(size 96)"), std::string::npos) << text;
}

TEST(Symbolic, Index64WhenOffsetsMayNotFit) {
  const Program generic = parse_program(kGather, "p.tfs");
  const Binding small = {100};
  std::vector<ArgDesc> args(3);
  args[0] = {DType::F16, {96, 64}, {64, 1}, 0};
  args[1] = {DType::F16, {64, 48}, {48, 1}, 0};
  args[2] = {DType::I64, {100}, {1}, 0};
  EXPECT_FALSE(driver::specialize(generic.graph, small, args).index64);
  // 2^26 rows of 48 f16: the output has 3 * 2^30 elements.
  const Binding big = {int64_t{1} << 26};
  args[2].shape = {int64_t{1} << 26};
  const Specialization s = driver::specialize(generic.graph, big, args);
  EXPECT_TRUE(s.index64);
  driver::CompileOptions co;
  co.lower.specialization = s;
  const driver::CompiledProgram c = driver::compile(generic.graph, co);
  const tir::Kernel& k = c.kernels[0].kernel;
  EXPECT_EQ(k.params.back().var.dtype(), DType::I64);
  EXPECT_EQ(std::get<int64_t>(k.attrs.at("index_bits")), 64);
}

// Strided inputs: a fixed program specializes on the strides (constants),
// a symbolic one takes them as arguments.
TEST(Symbolic, StridedInputs) {
  const char* fixed = "def f(x: f32[6, 5], w: f32[5, 4]):\n    return x @ w\n";
  const char* symbolic = "def f(x: f32[T, 5], w: f32[5, N]):\n    return x @ w\n";
  for (const char* src : {fixed, symbolic}) {
    SCOPED_TRACE(src);
    const SymbolValues v = {{"T", 6}, {"N", 4}};
    const bool sym = src == symbolic;
    const Program generic = parse_program(src, "p.tfs");
    const Program bound = parse_program(src, "p.tfs", sym ? &v : nullptr);
    std::vector<Tensor> inputs = make_random_inputs(bound.graph, 7);
    // w as the transpose of a contiguous [4, 5] tensor; x as every other
    // row of a [12, 5] one.
    Tensor wt = inputs[1].permute({1, 0}).contiguous(true).permute({1, 0});
    Tensor xs = Tensor::empty(DType::F32, {12, 5});
    xs.fill(NAN);
    Tensor xv = xs.slice(0, 0, 12, 2);
    for (int64_t i = 0; i < 30; ++i) xv.set_linear(i, inputs[0].get_linear(i));
    const std::vector<Tensor> strided = {xv, wt};
    const Binding b = driver::bind_symbols(generic.graph, strided);
    const Specialization spec = driver::specialize(generic.graph, b, descs(strided));
    ASSERT_EQ(spec.params.size(), 2u);
    EXPECT_EQ(spec.key(generic.graph),
              sym ? "T N i32 x:[?,1]/16 w:[1,?]/16" : "i32 x:[10,1]/16 w:[1,5]/16");
    driver::CompileOptions co;
    co.lower.specialization = spec;
    const driver::CompiledProgram c = driver::compile(generic.graph, co);
    driver::ExecuteOptions xo;
    xo.poison_outputs = true;
    const Tensor out = driver::execute(c, strided, xo)[0];
    const Tensor ref = evaluate(bound.graph, inputs)[0];
    EXPECT_LE(relative_error(out, ref), 1e-6);
    if (sym) {
      const std::string text = tir::print(c.kernels[0].kernel);
      EXPECT_NE(text.find("x_stride0"), std::string::npos) << text;
      EXPECT_NE(text.find("w_stride1"), std::string::npos) << text;
    }
  }
}

// A fixed program whose StridePolicy passes a dim's stride at run time:
// that stride becomes a kernel argument (`?`), 0 and 1 stay constants, the
// index width is decided as for a symbolic program, and the kernel is
// right at every pitch.
TEST(Symbolic, FixedProgramRunTimeStrides) {
  const char* src = "def f(x: f32[6, 5], w: f32[5, 4]):\n    return x @ w\n";
  const Program p = parse_program(src, "p.tfs");
  driver::StridePolicy policy;
  std::vector<ArgDesc> args(2);
  args[0] = {DType::F32, {6, 5}, {10, 1}, 0};
  args[1] = {DType::F32, {5, 4}, {4, 1}, 0};
  policy.observe(p.graph, args);
  EXPECT_EQ(driver::specialize(p.graph, {}, args, &policy.runtime_strides()).key(p.graph),
            "i32 x:[10,1]/16 w:c/16");
  args[0].strides = {7, 1};  // a new pitch: dim 0 from now on at run time
  policy.observe(p.graph, args);
  const Specialization spec = driver::specialize(p.graph, {}, args, &policy.runtime_strides());
  EXPECT_EQ(spec.key(p.graph), "i32 x:[?,1]/16 w:c/16");
  args[0].strides = {32, 1};  // (the pitch's divisibility is part of the key)
  policy.observe(p.graph, args);
  EXPECT_EQ(driver::specialize(p.graph, {}, args, &policy.runtime_strides()).key(p.graph),
            "i32 x:[?16,1]/16 w:c/16");
  // A pitch that takes x's offsets past 2^31: i64 index math.
  args[0].strides = {int64_t{1} << 29, 1};
  policy.observe(p.graph, args);
  EXPECT_TRUE(driver::specialize(p.graph, {}, args, &policy.runtime_strides()).index64);
  // Without the policy the same call compiles its pitch in (and needs no i64).
  const Specialization constant = driver::specialize(p.graph, {}, args);
  EXPECT_EQ(constant.key(p.graph), "i32 x:[536870912,1]/16 w:c/16");

  driver::CompileOptions co;
  co.lower.specialization = spec;
  const driver::CompiledProgram c = driver::compile(p.graph, co);
  EXPECT_NE(tir::print(c.kernels[0].kernel).find("x_stride0"), std::string::npos);
  // One compiled program, run at three pitches, against the reference.
  std::vector<Tensor> inputs = make_random_inputs(p.graph, 11);
  const Tensor ref = evaluate(p.graph, inputs)[0];
  for (int64_t pitch : {7, 9, 23}) {
    SCOPED_TRACE(pitch);
    Tensor buf = Tensor::empty(DType::F32, {6, pitch});
    buf.fill(NAN);
    Tensor xv = buf.slice(1, 0, 5, 1);
    for (int64_t i = 0; i < 30; ++i) xv.set_linear(i, inputs[0].get_linear(i));
    driver::ExecuteOptions xo;
    xo.poison_outputs = true;
    const Tensor out = driver::execute(c, {xv, inputs[1]}, xo)[0];
    EXPECT_LE(relative_error(out, ref), 1e-6);
  }
}

TEST(Symbolic, MismatchedInputsNameBothTensors) {
  const Program generic = parse_program(kMixed, "p.tfs");
  std::vector<ArgDesc> args(4);
  args[0] = {DType::F32, {10, 8}, {8, 1}, 0};
  args[1] = {DType::F32, {9, 4}, {4, 1}, 0};
  args[2] = {DType::F32, {1, 4}, {4, 1}, 0};
  args[3] = {DType::I32, {3}, {1}, 0};
  EXPECT_EQ(user_error([&] { driver::bind_symbols(generic.graph, args); }),
            "symbolic dim `K` is 8 in `x` (dim 1) but 9 in `w` (dim 0)");
  args[1].shape = {8, 4};
  args[2].shape = {2, 4};
  EXPECT_EQ(user_error([&] { driver::bind_symbols(generic.graph, args); }),
            "input `b` (f32[1, N]): dim 0 must be 1, got 2 (shape [2, 4])");
  args[2].shape = {1, 4};
  args[3].dtype = DType::I64;
  EXPECT_THROW(driver::bind_symbols(generic.graph, args), UserError);
  args[3].dtype = DType::I32;
  args[3].shape = {3, 1};
  EXPECT_EQ(user_error([&] { driver::bind_symbols(generic.graph, args); }),
            "input `idx` must have 1 dim (i32[M]), got 2 ([3, 1])");
}

TEST(Symbolic, OutOfRangeIndexReportsTheBoundSize) {
  const Program generic = parse_program(
      "def g(x: f32[T, 8], w: f32[8, 4], idx: i64[M]):\n    return x[idx] @ w\n", "p.tfs");
  const SymbolValues v = {{"T", 5}, {"M", 3}};
  const Program bound = parse_program(
      "def g(x: f32[T, 8], w: f32[8, 4], idx: i64[M]):\n    return x[idx] @ w\n", "p.tfs", &v);
  std::vector<Tensor> inputs = make_random_inputs(bound.graph, 3);
  inputs[2].set_linear(1, 5);  // one past the end of T = 5
  const Binding b = driver::bind_symbols(generic.graph, inputs);
  driver::CompileOptions co;
  co.lower.specialization = driver::specialize(generic.graph, b, descs(inputs));
  const driver::CompiledProgram c = driver::compile(generic.graph, co);
  EXPECT_EQ(user_error([&] { driver::execute(c, inputs); }),
            "index 5 is out of bounds for dim 0 of `x` (size 5): `idx`[1] = 5");
  // The reference says the same.
  EXPECT_EQ(user_error([&] { evaluate(bound.graph, inputs); }),
            "index 5 is out of bounds for dim 0 of `x` (size 5): `idx`[1] = 5");
}

// Past a 1-D index the compiled kernels name a symbolic size by its symbol
// (a GPU status word has no room for the size); the reference says the same,
// never the bound number or the generic graph's placeholder.
TEST(Symbolic, TwoDimIndexNamesTheSymbolicSizeOnEveryEngine) {
  const char* source = "def g(x: f32[T, 8], idx: i64[M, 2]):\n    return x[idx]\n";
  const Program generic = parse_program(source, "p.tfs");
  const SymbolValues v = {{"T", 5}, {"M", 3}};
  const Program bound = parse_program(source, "p.tfs", &v);
  std::vector<Tensor> inputs = make_random_inputs(bound.graph, 3);
  for (int64_t i = 0; i < 6; ++i) inputs[1].set_linear(i, i % 5);
  inputs[1].set_linear(3, 7);  // idx[1, 1]: past the end of T = 5
  const Binding b = driver::bind_symbols(generic.graph, inputs);
  driver::CompileOptions co;
  co.lower.specialization = driver::specialize(generic.graph, b, descs(inputs));
  const driver::CompiledProgram c = driver::compile(generic.graph, co);
  const std::string want = "index 7 is out of bounds for dim 0 of `x` (size T): `idx`[1, 1] = 7";
  EXPECT_EQ(user_error([&] { driver::execute(c, inputs); }), want);
  EXPECT_EQ(user_error([&] { evaluate(bound.graph, inputs); }), want);
}

// A zero-size tensor bound with a huge other dim has no elements; the limit
// its dims break is named, not "more than 2^40 elements".
TEST(Symbolic, BindingAnEmptyTensorWithAHugeDimNamesTheLimit) {
  const Program generic = parse_program("def g(x: f32[T, 0]):\n    return x + 1.0\n", "p.tfs");
  const int64_t max = std::numeric_limits<int64_t>::max();
  std::vector<ArgDesc> args = {{DType::F32, {max, 0}, {0, 1}, 0}};
  const std::string msg = user_error([&] { driver::bind_symbols(generic.graph, args); });
  EXPECT_EQ(msg.find("more than 2^40 elements"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at T=9223372036854775807"), std::string::npos) << msg;
  EXPECT_NE(msg.find("`x` (f32[9223372036854775807, 0]) has no elements"), std::string::npos)
      << msg;
  args[0].shape = {int64_t{1} << 40, 0};
  EXPECT_NO_THROW(driver::bind_symbols(generic.graph, args));
}

// Sizes that make a value past the size limit, given by a call (the C API,
// the Python package): the error is at that value's place in the program, as
// `tilefuse run --shape` reports it. It had no location ("at A=2097152,
// B=1048576 the program has a tensor that is too large: the result of add
// ..."), so in a program of many adds nothing said which one.
TEST(Symbolic, ATooLargeValueAtTheCallsSizesIsLocated) {
  const Program generic = parse_program(
      "def g(x: f32[A, 1], y: f32[1, B]):\n    z = x * 2.0\n    return z + y\n", "p.tfs");
  const std::vector<ArgDesc> args = {{DType::F32, {int64_t{1} << 21, 1}, {0, 0}, 0},
                                     {DType::F32, {1, int64_t{1} << 20}, {0, 0}, 0}};
  try {
    driver::bind_symbols(generic.graph, args);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    EXPECT_NE(std::string(e.what()).find("the result of add (f32[2097152, 1048576]) has more "
                                         "than 2^40 elements"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.loc().line, 3);
    EXPECT_EQ(e.loc().col, 14);
  }
}

TEST(Symbolic, SizeBuckets) {
  EXPECT_EQ(driver::size_bucket(0), 0);
  EXPECT_EQ(driver::size_bucket(1), 1);
  EXPECT_EQ(driver::size_bucket(2), 2);
  EXPECT_EQ(driver::size_bucket(7), 8);
  EXPECT_EQ(driver::size_bucket(2048), 2048);
  EXPECT_EQ(driver::size_bucket(5000), 8192);
}

// offset_reach is sum((size + 256) * |stride|), INT64_MAX once that leaves
// int64, including a stride of INT64_MIN (whose magnitude int64 lacks).
TEST(Symbolic, OffsetReach) {
  EXPECT_EQ(driver::offset_reach({4, 8}, {8, 1}), (4 + 256) * 8 + (8 + 256) * 1);
  EXPECT_EQ(driver::offset_reach({4, 8}, {-8, 1}), (4 + 256) * 8 + (8 + 256) * 1);
  EXPECT_EQ(driver::offset_reach({1, 8}, {std::numeric_limits<int64_t>::min(), 1}),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(driver::offset_reach({1, 8}, {std::numeric_limits<int64_t>::max(), 1}),
            std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace tilefuse

namespace tilefuse {
namespace {

// cuBLASLt reads contiguous, 16-byte aligned operands: a GEMM step whose
// operand the specialization lays out otherwise (a transposed or offset
// input through the C API) keeps our kernel.
TEST(Symbolic, CublasLtOnlyForContiguousAlignedOperands) {
  const Program p = parse_program("def f(x: f16[64, 32], w: f16[32, 48]):\n    return x @ w\n",
                                  "f.tfs");
  driver::CompileOptions co;
  co.plan = PlanKind::kUnfused;
  co.target = *tir::Target::parse("sm_80");
  EXPECT_EQ(driver::cublaslt_gemm_kernels(driver::compile(p.graph, co)).size(), 1u);
  co.lower.specialization.params = {ParamLayout{}, ParamLayout{{1, 32}, {false, false}, 16}};
  EXPECT_TRUE(driver::cublaslt_gemm_kernels(driver::compile(p.graph, co)).empty());
  co.lower.specialization.params = {ParamLayout{{}, {}, 2}, ParamLayout{}};
  EXPECT_TRUE(driver::cublaslt_gemm_kernels(driver::compile(p.graph, co)).empty());
}

}  // namespace
}  // namespace tilefuse
