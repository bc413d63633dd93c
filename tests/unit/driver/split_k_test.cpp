// Split-K on the CPU executor: the same Tile IR program the CUDA backend
// prints (gemm_template.h: each split stores its partial tile to the
// workspace, if_last_arrival elects the last block of a tile, which sums
// the partials in split order and runs the epilogue once). Instances run
// concurrently on the executor's threads, so the election is exercised
// with real arrivals in varying order. Every program is held to the f64
// oracle within check_tolerance on fresh random inputs with outputs (and
// the workspace) poisoned; M, N and K tails, empty splits, every epilogue
// kind (addmm bias, activations, scaling, a cast), a gather, a batched
// GEMM and f32 / f64 accumulators; and the output is bit-identical across
// runs.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "driver/compile.h"
#include "lower/gemm_template.h"
#include "driver/execute.h"
#include "frontend/frontend.h"
#include "reference/eval.h"
#include "reference/inputs.h"
#include "runtime/cpu/executor.h"
#include "tir/printer.h"

namespace tilefuse {
namespace {

struct SplitProgram {
  const char* name;
  const char* source;
};

const std::vector<SplitProgram>& split_programs() {
  static const std::vector<SplitProgram> p = {
      // M, N, K tails of every tile below.
      {"plain_f16", "def f(x: f16[70, 300], w: f16[300, 50]):\n    return x @ w\n"},
      // A gather, addmm's bias with alpha/beta, an activation and a cast.
      {"gather_addmm_gelu_cast",
       "def f(x: f16[90, 200], idx: i64[70] in [0, 90), w: f16[200, 50], b: f32[50]):\n"
       "    y = torch.addmm(b, x[idx].to(torch.float32), w.to(torch.float32), beta=0.5, "
       "alpha=2.0)\n"
       "    return torch.nn.functional.gelu(y).to(torch.float16)\n"},
      // bias + relu (bf16), a scaling and a side input read at the output index.
      {"bias_relu_scale_bf16",
       "def f(x: bf16[33, 260], w: bf16[260, 40], b: bf16[40], r: bf16[33, 40]):\n"
       "    return torch.relu(x @ w + b) * 0.5 + r\n"},
      // Batched with a gather inside each batch: the tile counters span the batch.
      {"bmm_gather",
       "def f(x: f16[3, 40, 96], idx: i64[24] in [0, 40), w: f16[3, 96, 20]):\n"
       "    return torch.sigmoid(torch.bmm(x[:, idx], w))\n"},
      // f32 and f64 (an f64 workspace).
      {"f32_silu",
       "def f(x: f32[17, 129], w: f32[129, 19]):\n    return torch.nn.functional.silu(x @ w)\n"},
      {"f64_tanh", "def f(x: f64[20, 100], w: f64[100, 12]):\n    return torch.tanh(x @ w)\n"},
  };
  return p;
}

// Split factors over 16x16x16 tiles: 2 (uneven), 3, 5 and 7 (with K = 96
// .. 300, the last splits reach past K or are empty: K tiles 6..19).
const std::vector<GemmConfig>& split_configs() {
  static const std::vector<GemmConfig> c = {
      GemmConfig{16, 16, 16, 1, 4, 8, 2}, GemmConfig{32, 16, 16, 1, 4, 8, 3},
      GemmConfig{16, 32, 32, 1, 4, 8, 5}, GemmConfig{16, 16, 16, 1, 4, 8, 7}};
  return c;
}

driver::CompiledProgram compile_split(const Graph& g, PlanKind plan, const GemmConfig& config) {
  driver::CompileOptions co;
  co.plan = plan;
  co.lower.gemm_config = config;
  return driver::compile(g, co);
}

std::vector<Tensor> run(const driver::CompiledProgram& c, const std::vector<Tensor>& inputs) {
  driver::ExecuteOptions eo;
  eo.poison_outputs = true;
  eo.num_threads = 4;
  return driver::execute(c, inputs, eo);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.numel() * dtype_size(x.dtype())) == 0;
}

// Every split program, both plans, each config of `configs`, on fresh random
// inputs against the f64 oracle; `kernel_ok` asserts on each GEMM kernel's
// printed TIR (its split form). `what` names the configs in the trace.
void expect_every_program_matches_the_oracle(
    const std::vector<GemmConfig>& configs, const char* what,
    const std::function<void(const std::string&)>& kernel_ok) {
  const uint64_t seed = std::random_device{}();
  std::printf("%s CPU programs, seed %llu\n", what, static_cast<unsigned long long>(seed));
  int ran = 0;
  for (const SplitProgram& sp : split_programs()) {
    const Program p = parse_program(sp.source, std::string(sp.name) + ".tfs");
    const std::vector<Tensor> inputs = make_random_inputs(p.graph, seed);
    EvalOptions o;
    o.mode = EvalMode::kOracle;
    const std::vector<Tensor> oracle = evaluate(p.graph, inputs, o);
    const double tol = check_tolerance(p.graph, p.graph.outputs()[0]);
    for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
      for (const GemmConfig& cfg : configs) {
        SCOPED_TRACE(fmt::format("{} {} {} (split {}, stream-K {}) seed {}", sp.name,
                                 plan_kind_name(plan), what, cfg.split_k, cfg.stream_k, seed));
        const driver::CompiledProgram c = compile_split(p.graph, plan, cfg);
        bool gemm = false;
        for (const driver::CompiledKernel& ck : c.kernels)
          if (ck.lowered.gemm_config) {
            gemm = true;
            EXPECT_EQ(ck.lowered.scratch.size(), 2u);
            kernel_ok(tir::print(ck.kernel));
          }
        EXPECT_TRUE(gemm);
        const std::vector<Tensor> got = run(c, inputs);
        ASSERT_EQ(got.size(), 1u);
        EXPECT_LE(relative_error(got[0], oracle[0]), tol);  // false for NaN
        ++ran;
      }
    }
  }
  EXPECT_EQ(ran, static_cast<int>(split_programs().size() * 2 * configs.size()));
}

TEST(SplitK, EveryEpilogueAndTailMatchesTheOracle) {
  expect_every_program_matches_the_oracle(split_configs(), "split-K", [](const std::string& t) {
    EXPECT_NE(t.find("if_last_arrival("), std::string::npos);
  });
}

// The partials are summed in split order, not arrival order: ten runs on
// four threads (arrivals in varying order) give the same bits; and the
// result is that of the fixed order, so a single-threaded run agrees.
TEST(SplitK, BitIdenticalAcrossRuns) {
  const Program p = parse_program(split_programs()[1].source, "gather_addmm_gelu_cast.tfs");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, 1234);
  const driver::CompiledProgram c = compile_split(p.graph, PlanKind::kFused, split_configs()[3]);
  const std::vector<Tensor> first = run(c, inputs);
  for (int r = 0; r < 10; ++r) {
    driver::ExecuteOptions eo;
    eo.poison_outputs = true;
    eo.num_threads = r % 2 == 0 ? 4 : 1;
    const std::vector<Tensor> again = driver::execute(c, inputs, eo);
    EXPECT_TRUE(same_bits(first[0], again[0])) << "run " << r;
  }
}

// The tile counters are left at 0: a second run of the same compiled
// program (which the CUDA runtime does with counters allocated once) elects
// a last block again. Run here through the kernel with one counter buffer
// kept across runs.
TEST(SplitK, CountersAreResetByTheLastBlock) {
  const Program p = parse_program(split_programs()[0].source, "plain_f16.tfs");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, 7);
  const driver::CompiledProgram c = compile_split(p.graph, PlanKind::kFused, split_configs()[1]);
  ASSERT_EQ(c.kernels.size(), 1u);
  const driver::CompiledKernel& ck = c.kernels[0];
  ASSERT_EQ(ck.lowered.scratch.size(), 2u);
  const ScratchBuffer& ws = ck.lowered.scratch[0];
  const ScratchBuffer& ctr = ck.lowered.scratch[1];
  EXPECT_FALSE(ws.zeroed);
  EXPECT_TRUE(ctr.zeroed);
  EXPECT_EQ(ctr.dtype, DType::I32);
  Tensor counters = Tensor::full(DType::I32, ctr.shape, 0);
  Tensor workspace = Tensor::full(ws.dtype, ws.shape, NAN);
  const Node& out = p.graph.node(p.graph.outputs()[0]);
  for (int r = 0; r < 3; ++r) {
    Tensor o = Tensor::full(out.dtype, out.shape, NAN);
    std::vector<runtime::KernelArg> args;
    for (size_t i = 0; i + 1 < ck.lowered.bindings.size(); ++i)
      args.emplace_back(ck.kernel.params[i].name(), inputs[i].contiguous());
    args.emplace_back(ck.kernel.params[ck.lowered.bindings.size() - 1].name(), o);
    args.emplace_back(ws.name, workspace);
    args.emplace_back(ctr.name, counters);
    runtime::ExecOptions eo;
    eo.num_threads = 3;
    runtime::execute(ck.kernel, args, eo);
    const int32_t* cp = reinterpret_cast<const int32_t*>(counters.data_ptr());
    for (int64_t t = 0; t < counters.numel(); ++t) EXPECT_EQ(cp[t], 0) << "tile " << t;
    EvalOptions eval;
    eval.mode = EvalMode::kOracle;
    EXPECT_LE(relative_error(o, evaluate(p.graph, inputs, eval)[0]),
              check_tolerance(p.graph, p.graph.outputs()[0]))
        << "run " << r;
  }
}

// ---- stream-K (GemmConfig::stream_k) ----------------------------------------
// The same programs through the stream-K template: the CPU executor runs
// each work item as an instance (the pieces of one unit concurrently, so
// the arrivals come in every order).

// The schedule covers every K iteration of every tile exactly once, in K
// order within a tile; units and pieces are as StreamKSchedule documents.
TEST(StreamK, ScheduleCoversEveryIterationOnce) {
  for (int64_t tiles : {1, 2, 5, 20, 131, 132, 133, 263, 2048})
    for (int64_t k_tiles : {1, 2, 3, 19, 64, 128})
      for (int64_t units : {1, 3, 7, 132, 500}) {
        SCOPED_TRACE(fmt::format("tiles {} k_tiles {} units {}", tiles, k_tiles, units));
        const std::optional<StreamKSchedule> s = stream_k_schedule(tiles, k_tiles, units);
        ASSERT_TRUE(s.has_value());
        EXPECT_EQ(s->dp_tiles % s->units, 0);
        EXPECT_EQ(s->dp_tiles + s->sk_tiles, tiles);
        EXPECT_LE(s->units, units);
        // (the last wave shared out, a whole one where the waves are whole, one
        // more where its iterations are fewer than the units; all of them
        // when fewer tiles than units)
        if (tiles >= units && (tiles % units) * k_tiles >= units) {
          EXPECT_GE(s->sk_tiles, 1);
          EXPECT_LE(s->sk_tiles, units);
          EXPECT_EQ(s->sk_tiles == units, tiles % units == 0);
        } else if (s->dp_tiles > 0) {
          EXPECT_GE(s->sk_tiles * k_tiles, units);
          EXPECT_LT((s->sk_tiles - units) * k_tiles, units);
        } else {
          EXPECT_EQ(s->dp_tiles, 0);
        }
        EXPECT_EQ(s->begin(0), 0);
        EXPECT_EQ(s->begin(s->units), s->sk_tiles * k_tiles);
        EXPECT_LE(s->sk_units, s->units);
        EXPECT_LE(s->peers, 3);  // (at least half a tile a unit)
        std::vector<int> seen(static_cast<size_t>(s->sk_tiles * k_tiles), 0);
        int64_t most_pieces = 0;
        for (int64_t u = 0; u < s->units; ++u) {
          if (u < s->sk_units)
            EXPECT_LT(s->begin(u), s->begin(u + 1)) << "unit " << u << " is empty";
          else
            EXPECT_EQ(s->begin(u), s->begin(u + 1)) << "unit " << u << " has pieces";
          for (int64_t x = s->begin(u); x < s->begin(u + 1); ++x) {
            ++seen[static_cast<size_t>(x)];
            EXPECT_EQ(s->unit_of(x), u);
          }
          most_pieces = std::max(most_pieces, (s->begin(u + 1) - 1) / k_tiles -
                                                  s->begin(u) / k_tiles + 1);
        }
        EXPECT_EQ(most_pieces, s->pieces);
        for (int v : seen) ASSERT_EQ(v, 1);
        EXPECT_GE(s->peers, 1);
      }
  EXPECT_FALSE(stream_k_schedule(0, 4, 8).has_value());
  EXPECT_FALSE(stream_k_schedule(4, 0, 8).has_value());
}

// Stream-K over 16x16x16 (and 32) tiles: 3 units (several tiles a unit,
// whole tiles round robin first where the tiles are many), 5 and 7 (a tile
// cut into up to 3 pieces), and more units than K iterations (every unit
// one or two iterations).
GemmConfig streamed(GemmConfig c, int units) {
  c.stream_k = units;
  c.persistent = true;  // (as --gemm-config's /streamkU; the CPU runs the pieces as instances)
  return c;
}

const std::vector<GemmConfig>& stream_configs() {
  static const std::vector<GemmConfig> c = {streamed(GemmConfig{16, 16, 16, 1, 4, 8}, 3),
                                            streamed(GemmConfig{32, 16, 16, 1, 4, 8}, 5),
                                            streamed(GemmConfig{16, 32, 32, 1, 4, 8}, 7),
                                            streamed(GemmConfig{16, 16, 16, 1, 4, 8}, 4000)};
  return c;
}

TEST(StreamK, EveryEpilogueAndTailMatchesTheOracle) {
  expect_every_program_matches_the_oracle(stream_configs(), "stream-K", [](const std::string& t) {
    EXPECT_NE(t.find("if_last_arrival(streamk_counters"), std::string::npos);
    EXPECT_NE(t.find("pid_w"), std::string::npos);
  });
}

// The partials are summed in K order, not arrival order.
TEST(StreamK, BitIdenticalAcrossRuns) {
  const Program p = parse_program(split_programs()[1].source, "gather_addmm_gelu_cast.tfs");
  const std::vector<Tensor> inputs = make_random_inputs(p.graph, 4321);
  for (const GemmConfig& cfg : {stream_configs()[1], stream_configs()[2]}) {
    const driver::CompiledProgram c = compile_split(p.graph, PlanKind::kFused, cfg);
    const std::vector<Tensor> first = run(c, inputs);
    for (int r = 0; r < 10; ++r) {
      driver::ExecuteOptions eo;
      eo.poison_outputs = true;
      eo.num_threads = r % 2 == 0 ? 4 : 1;
      const std::vector<Tensor> again = driver::execute(c, inputs, eo);
      EXPECT_TRUE(same_bits(first[0], again[0])) << "stream-K " << cfg.stream_k << " run " << r;
    }
  }
}

// A symbolic size: a user's stream-K config gets a clear error.
TEST(StreamK, SymbolicSizeIsAUserError) {
  const Program p =
      parse_program("def f(x: f16[M, 64], w: f16[64, 32]):\n    return x @ w\n", "sym.tfs");
  driver::CompileOptions co;
  co.lower.gemm_config = stream_configs()[0];
  try {
    driver::compile(p.graph, co);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("stream-K (over 3 blocks) needs constant sizes"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tilefuse
