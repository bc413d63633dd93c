#include "driver/bench.h"

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <set>

#include "core/error.h"
#include "driver/execute.h"
#include "reference/eval.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/timing.h"
#include "schedule/schedule.h"

namespace tilefuse::driver {
namespace {

double max_rel_err(const std::vector<Tensor>& outs, const std::vector<Tensor>& refs) {
  double worst = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    const double e = oracle_error(outs[i], refs[i]);  // as `run --check`
    if (!(e <= worst)) worst = e;                     // NaN wins
  }
  return worst;
}

// The f64 oracle's outputs when options.check, else none.
std::vector<Tensor> oracle_outputs(const Graph& graph, const std::vector<Tensor>& inputs,
                                   const BenchOptions& options) {
  if (!options.check) return {};
  EvalOptions eval;
  eval.mode = EvalMode::kOracle;
  eval.num_threads = options.cpu_threads;
  return evaluate(graph, inputs, eval);
}

void finish(BenchRow& row, const cuda::Timing& t, const BenchReport& r) {
  row.median_ms = t.median_ms;
  row.min_ms = t.min_ms;
  row.max_ms = t.max_ms;
  if (t.median_ms > 0) {
    row.tflops = r.gemm_flops / (t.median_ms * 1e-3) / 1e12;
    row.gbps = r.min_bytes / (t.median_ms * 1e-3) / 1e9;
    if (r.copy_gbps > 0) row.copy_fraction = row.gbps / r.copy_gbps;
  }
}

bool is_view_kind(OpKind k) {
  return k == OpKind::Slice || k == OpKind::Permute || k == OpKind::Expand || k == OpKind::Select;
}

// (user, operand slot) of every node input, per value.
using Uses = std::vector<std::vector<std::pair<ValueId, size_t>>>;

// The elements of `v` that gathers read when every use of `v` is the
// gathered operand (input 0) of an Index, directly or through views: the
// numel of each such Index's result, summed. nullopt when some use is
// anything else, or `v` (or a view of it on the way) is a graph output.
std::optional<double> gathered_elements(const Graph& g, const Uses& uses,
                                        const std::set<ValueId>& outputs, ValueId v) {
  // A worklist, not recursion: a chain of views is as long as the program
  // (80,000 `.T` segfaulted here at the default stack). A view has one
  // input, so the views below `v` form a tree and each is visited once.
  double total = 0;
  std::vector<ValueId> pending{v};
  while (!pending.empty()) {
    const ValueId at = pending.back();
    pending.pop_back();
    if (outputs.count(at)) return std::nullopt;
    for (const auto& [user, slot] : uses[static_cast<size_t>(at)]) {
      const Node& u = g.node(user);
      if (u.kind == OpKind::Index && slot == 0) {
        total += static_cast<double>(shape_numel(u.shape));
      } else if (is_view_kind(u.kind)) {
        pending.push_back(user);
      } else {
        return std::nullopt;
      }
    }
  }
  return total;
}

// The config overrides of `plan`'s rows.
const LowerOptions& lower_for(const BenchOptions& o, PlanKind plan) {
  const std::optional<LowerOptions>& per_plan =
      plan == PlanKind::kFused ? o.fused_lower : o.unfused_lower;
  return per_plan ? *per_plan : o.lower;
}

// Appends the "chosen" row: a copy of the row of options.chosen_plan (the
// unfused+cuBLASLt row with chosen_cublaslt).
void add_chosen(BenchReport& r, const BenchOptions& o) {
  if (!o.chosen_plan) return;
  const std::string plan =
      o.chosen_cublaslt ? "unfused+cuBLASLt" : std::string(plan_kind_name(*o.chosen_plan));
  for (const BenchRow& row : r.rows) {
    if (row.name != plan) continue;
    BenchRow chosen = row;
    chosen.name = "chosen";
    chosen.note = o.chosen_note.empty() ? "= the " + plan + " row" : o.chosen_note;
    // A row that did not run here (cuBLASLt unavailable now): say so.
    if (row.median_ms <= 0) chosen.note = "the chosen " + plan + " did not run: " + row.note;
    r.rows.push_back(std::move(chosen));
    return;
  }
}

cuda::TimingOptions timing_options(const BenchOptions& o) {
  cuda::TimingOptions t;
  t.warmup = o.warmup;
  t.repeats = o.repeats;
  t.warmup_ms = o.warmup_ms;
  t.flush_l2 = o.flush_l2;
  return t;
}

}  // namespace

double gemm_flops(const Graph& graph) {
  double f = 0;
  for (const KernelStep& s : build_plan(graph, PlanKind::kFused).steps)
    if (s.kind == StepKind::kGemm)
      f += 2.0 * static_cast<double>(shape_numel(s.gemm.batch)) * s.gemm.m * s.gemm.n * s.gemm.k;
  return f;
}

double min_traffic_bytes(const Graph& graph) {
  Uses uses(static_cast<size_t>(graph.size()));
  for (ValueId v = 0; v < graph.size(); ++v) {
    const std::vector<ValueId>& in = graph.node(v).inputs;
    for (size_t slot = 0; slot < in.size(); ++slot)
      uses[static_cast<size_t>(in[slot])].push_back({v, slot});
  }
  const std::set<ValueId> outputs(graph.outputs().begin(), graph.outputs().end());
  double b = 0;
  for (ValueId v : graph.parameters()) {
    const Node& p = graph.node(v);
    const std::optional<double> gathered = gathered_elements(graph, uses, outputs, v);
    const double elements = gathered ? *gathered : static_cast<double>(shape_numel(p.shape));
    b += elements * static_cast<double>(dtype_size(p.dtype));
  }
  for (ValueId v : graph.outputs())
    b += static_cast<double>(shape_numel(graph.node(v).shape)) *
         static_cast<double>(dtype_size(graph.node(v).dtype));
  return b;
}

double time_cuda_program(CudaProgram& program, const std::vector<Tensor>& inputs,
                         const BenchOptions& options) {
  program.bind(inputs);
  program.launch();
  program.check_status();
  cuda::Timing t = cuda::time_on_device(
      default_device(), [&] { program.launch(); }, timing_options(options));
  program.check_status();
  return t.median_ms;
}

// The note of an unfused row that repeats the fused row's times.
constexpr const char* kSameKernelsNote =
    "the fused plan's kernels (the unfused plan has the same steps): timed once, as the fused row";

BenchReport bench_gpu(const Graph& graph, const std::vector<Tensor>& inputs,
                      const BenchOptions& options) {
  cuda::Device& dev = default_device();
  std::optional<tir::Target> target = tir::Target::parse(dev.arch());
  if (!target)
    throw UserError(
        fmt::format("the GPU {} is {}; tilefuse needs sm_80 or newer", dev.name(), dev.arch()));
  BenchReport r;
  r.device = dev.name();
  r.target = target->name();
  r.gemm_flops = gemm_flops(graph);
  r.min_bytes = min_traffic_bytes(graph);
  const std::vector<Tensor> refs = oracle_outputs(graph, inputs, options);
  const cuda::TimingOptions topt = timing_options(options);
  // The ceiling the rows' GB/s are compared with, measured now, on the
  // same clocks and with the same timing as the rows.
  if (options.copy_bytes == 0) {
    r.copy_note = "not measured (copy_bytes 0)";
  } else if (dev.total_memory() < 3 * options.copy_bytes) {
    r.copy_note = fmt::format("not measured: the GPU has {} MiB, the copy needs {} MiB",
                              dev.total_memory() >> 20, (2 * options.copy_bytes) >> 20);
  } else {
    try {
      r.copy_gbps = cuda::measure_copy_bandwidth(dev, options.copy_bytes, topt).gbps;
    } catch (const UserError& e) {
      r.copy_note = std::string("not measured: ") + e.what();
    }
  }
  // The rows are prepared first (compiled, loaded, checked), then timed
  // together, their launches in alternation (cuda::time_interleaved_on_device):
  // timed one after the other, a 1.4 ms GEMM timed later ran at a lower clock
  // once the GPU reached its power cap, which moved the ratios of the rows by
  // several per cent (bench/RESULTS.md, session 37).
  struct Timed {
    BenchRow row;
    // (the program refers to its compiled kernels: they live as long)
    std::shared_ptr<const CompiledProgram> compiled;
    std::shared_ptr<CudaProgram> program;
    std::function<void()> launch;  // empty: the row is not timed (its note says why)
    int copy_of = -1;              // the index of a row this one repeats (the same kernels)
  };
  std::vector<Timed> timed;
  // One device copy of the inputs for every row (the same values, and the
  // memory of one copy: a row each had made a program with inputs above a
  // third of the GPU's memory fail for memory where it ran one row at a
  // time); each row allocates only its own outputs and intermediates.
  const auto device_inputs = std::make_shared<const DeviceInputs>(dev, inputs);
  auto add_row = [&](const std::string& name, PlanKind plan, bool blas) {
    CompileOptions co;
    co.plan = plan;
    co.target = *target;
    co.lower = lower_for(options, plan);
    co.lower.specialization = options.specialization;
    co.allow_tf32 = options.allow_tf32;  // CudaProgram passes it on to cuBLASLt
    co.cuda = options.cuda;
    CompiledProgram compiled = compile(options.compile_graph ? *options.compile_graph : graph, co);
    Timed t;
    t.row.name = name;
    // Where the unfused plan runs the fused row's kernels (a plain GEMM, a
    // pointwise chain), its row repeats the fused row's times, and says so,
    // instead of timing the same kernels again (which differed by up to 6%
    // by noise at 8192^3 on an H100, session 37).
    if (!blas && plan == PlanKind::kUnfused && !timed.empty() &&
        timed.front().row.name == "fused" && timed.front().launch &&
        same_kernels(*timed.front().compiled, compiled)) {
      t.copy_of = 0;
      t.row.note = kSameKernelsNote;
      timed.push_back(std::move(t));
      return;
    }
    CudaProgramOptions po;
    po.cublaslt_gemms = blas;
    // The baseline at its best: the heuristic's top algorithms, timed, the
    // fastest kept (issue 15: PyTorch's cuBLAS call ran 1253-1329 us at
    // moe_up_proj where the heuristic's first took 1411).
    po.cublaslt_algorithms = options.cublaslt_algorithms;
    std::string why;
    if (blas && !cuda::cublaslt_available(&why)) {
      t.row.note = "cuBLASLt unavailable: " + why;
      timed.push_back(std::move(t));
      return;
    }
    t.compiled = std::make_shared<const CompiledProgram>(std::move(compiled));
    auto prog = std::make_shared<CudaProgram>(*t.compiled, dev, po);
    if (blas && prog->cublaslt_steps().empty()) {
      t.row.note = "no plain GEMM step for cuBLASLt (prologue, bias or epilogue in every GEMM)";
      timed.push_back(std::move(t));
      return;
    }
    prog->bind(device_inputs, /*poison=*/true);
    if (blas && options.cublaslt_algorithms > 1) {
      cuda::TimingOptions quick = topt;
      quick.repeats = std::min(quick.repeats, 20);
      prog->autotune_cublaslt(quick);
    }
    t.row.kernels = prog->stats();
    prog->launch();
    prog->check_status();
    if (options.check) t.row.rel_err = max_rel_err(prog->outputs(), refs);
    t.program = prog;
    t.launch = [p = prog.get()] { p->launch(); };
    timed.push_back(std::move(t));
    if (blas && options.baselines) {
      // The cuBLASLt GEMMs alone: what a fused kernel should match.
      Timed alone;
      alone.row.name = "cuBLASLt GEMM only";
      const std::vector<size_t> steps = prog->cublaslt_steps();
      for (size_t st : steps) alone.row.kernels.push_back(prog->stats()[st]);
      alone.row.note = "the GEMM without its gather/prologue kernels";
      alone.compiled = timed.back().compiled;
      alone.program = prog;
      alone.launch = [p = prog.get(), steps] {
        for (size_t st : steps) p->launch_step(st);
      };
      timed.push_back(std::move(alone));
    }
  };
  add_row("fused", PlanKind::kFused, false);
  add_row("unfused", PlanKind::kUnfused, false);
  // The tuned choice may be this row: it then runs without baselines too.
  if (options.baselines || options.chosen_cublaslt)
    add_row("unfused+cuBLASLt", PlanKind::kUnfused, true);
  std::vector<std::function<void()>> launches;
  std::vector<size_t> launched;
  for (size_t i = 0; i < timed.size(); ++i)
    if (timed[i].launch) {
      launches.push_back(timed[i].launch);
      launched.push_back(i);
    }
  if (!launches.empty()) {
    const std::vector<cuda::Timing> t = cuda::time_interleaved_on_device(dev, launches, topt);
    for (size_t k = 0; k < launched.size(); ++k) finish(timed[launched[k]].row, t[k], r);
  }
  for (Timed& t : timed) {
    if (!t.program) continue;
    t.program->check_status();
    // The recorded launch starts like a timed repeat: from a flushed L2.
    if (t.row.name != "cuBLASLt GEMM only")
      t.row.timelines = t.program->block_timelines([&] {
        if (topt.flush_l2) cuda::flush_l2(dev);
      });
  }
  for (const Timed& t : timed) {
    if (t.copy_of < 0) {
      r.rows.push_back(t.row);
      continue;
    }
    BenchRow copy = timed[static_cast<size_t>(t.copy_of)].row;
    copy.name = t.row.name;
    copy.note = t.row.note;
    // (its kernels and timelines are the fused row's: listed there once)
    copy.kernels.clear();
    copy.timelines.clear();
    r.rows.push_back(std::move(copy));
  }
  add_chosen(r, options);
  return r;
}

BenchReport bench_cpu(const Graph& graph, const std::vector<Tensor>& inputs,
                      const BenchOptions& options) {
  BenchReport r;
  r.device = "cpu";
  r.target = "cpu";
  r.gemm_flops = gemm_flops(graph);
  r.min_bytes = min_traffic_bytes(graph);
  r.copy_note = "not measured on the CPU";
  const std::vector<Tensor> refs = oracle_outputs(graph, inputs, options);
  cuda::TimingOptions topt = timing_options(options);
  std::optional<CompiledProgram> fused_program;
  for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
    CompileOptions co;
    co.plan = plan;
    co.lower = lower_for(options, plan);
    co.lower.specialization = options.specialization;
    CompiledProgram compiled = compile(options.compile_graph ? *options.compile_graph : graph, co);
    if (plan == PlanKind::kUnfused && fused_program && same_kernels(*fused_program, compiled)) {
      BenchRow row = r.rows.front();  // (the fused row: timed once, bench_gpu's rule)
      row.name = "unfused";
      row.note = kSameKernelsNote;
      r.rows.push_back(row);
      continue;
    }
    if (plan == PlanKind::kFused) fused_program = compiled;
    ExecuteOptions xo;
    xo.num_threads = options.cpu_threads;
    BenchRow row;
    row.name = plan == PlanKind::kFused ? "fused" : "unfused";
    std::vector<Tensor> outs = execute(compiled, inputs, xo);
    if (options.check) row.rel_err = max_rel_err(outs, refs);
    finish(row, cuda::time_on_host([&] { execute(compiled, inputs, xo); }, topt), r);
    r.rows.push_back(row);
  }
  add_chosen(r, options);
  return r;
}

}  // namespace tilefuse::driver
