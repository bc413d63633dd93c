#include "driver/compile.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>

#include "codegen/cuda/passes/passes.h"
#include "codegen/cuda/structure.h"
#include "core/error.h"
#include "core/stack_guard.h"
#include "schedule/schedule.h"
#include "tir/printer.h"

namespace tilefuse::driver {
using passes::PassEntry;

std::vector<PassEntry> compile_passes(const tir::Target& target) {
  std::vector<PassEntry> passes = passes::target_independent_passes();
  const std::vector<PassEntry>& backend =
      target.is_cuda() ? codegen::cuda_passes() : passes::cpu_passes();
  passes.insert(passes.end(), backend.begin(), backend.end());
  return passes;
}

std::vector<std::string> pass_names(const tir::Target& target) {
  std::vector<std::string> names;
  for (const PassEntry& p : compile_passes(target)) names.emplace_back(p.name);
  return names;
}

CompiledProgram compile(const Graph& graph, const CompileOptions& options) {
  // An unknown --dump-after is a user error even for a program with no
  // kernel (run_passes would only see it on the first kernel).
  if (!options.dump_after.empty() && options.dump_after != "all") {
    const std::vector<std::string> names = pass_names(options.target);
    if (std::find(names.begin(), names.end(), options.dump_after) == names.end()) {
      std::string valid;
      for (const std::string& n : names) valid += n + ", ";
      // A CUDA backend pass asked for on the CPU target: say which flag.
      const std::vector<std::string> cuda = pass_names(*tir::Target::parse("sm_90a"));
      const bool cuda_pass = !options.target.is_cuda() &&
                             std::find(cuda.begin(), cuda.end(), options.dump_after) != cuda.end();
      throw UserError(cuda_pass ? "--dump-after: '" + options.dump_after +
                                      "' is a pass of the CUDA backend; give a CUDA target "
                                      "(--target sm_80 or --target sm_90a). The CPU target's "
                                      "passes: " +
                                      valid + "all"
                                : "unknown pass '" + options.dump_after +
                                      "' for --dump-after; valid names: " + valid + "all");
    }
  }

  CompiledProgram program;
  program.graph = graph;
  program.target = options.target;
  // One switch, two spellings (CompileOptions::allow_tf32 and the code
  // generator's CudaOptions::allow_tf32): either turns it on, and the
  // program, its cuBLASLt steps and its kernels all see the same value.
  program.allow_tf32 = options.allow_tf32 || options.cuda.allow_tf32;
  program.specialization = options.lower.specialization;
  program.cuda = options.cuda;
  program.cuda.allow_tf32 = program.allow_tf32;
  program.plan = build_plan(graph, options.plan);
  LowerOptions lower_options = options.lower;
  lower_options.wgmma = options.target.has_wgmma();
  lower_options.cpu = !options.target.is_cuda();

  passes::PassContext context{options.target, program.cuda};
  const std::vector<PassEntry> table = compile_passes(options.target);
  passes::PipelineOptions pipeline;
  pipeline.dump_after = options.dump_after;
  pipeline.dump = options.dump;
  program.kernels.resize(program.plan.steps.size());
  for (size_t i = 0; i < program.plan.steps.size(); ++i) {
    const KernelStep& step = program.plan.steps[i];
    CompiledKernel& ck = program.kernels[i];
    try {
      ck.lowered = lower_step(graph, step, lower_options);
      ck.lowered.step_index = static_cast<int>(i);
      passes::PassReports reports;
      context.reports = &reports;
      ck.kernel = options.optimize ? passes::run_passes(ck.lowered.kernel, table, context, pipeline)
                                   : ck.lowered.kernel;
      ck.licm = std::move(reports.licm);
      ck.copies = std::move(reports.copies);
      if (options.optimize && options.target.is_cuda())
        ck.cuda = codegen::emit_cuda(ck.kernel, options.target);
    } catch (const ProgramTooLarge& e) {
      // A walk of the kernel's IR knows no program location: the step's
      // output is where the kernel's value is written in the program.
      if (e.loc().valid()) throw;
      throw ProgramTooLarge(std::string(e.what()) + " (in the kernel computing " +
                                describe_value(graph.node(step.output)) + ")",
                            graph.node(step.output).loc);
    }
  }
  return program;
}

ConfigCost config_cost(const Graph& graph, PlanKind plan, const GemmConfig& config,
                       const tir::Target& target, const tir::CudaOptions& cuda,
                       int64_t max_shared_bytes, int max_accumulators,
                       const Specialization& specialization) {
  ConfigCost cost;
  CompileOptions co;
  co.plan = plan;
  co.target = target;
  co.cuda = cuda;
  co.allow_tf32 = cuda.allow_tf32;
  co.lower.gemm_config = config;
  co.lower.specialization = specialization;
  CompiledProgram p;
  try {
    p = compile(graph, co);
  } catch (const std::exception& e) {
    cost.why = std::string("the compiler rejects it: ") + e.what();
    return cost;
  }
  uint64_t h = 0;
  for (const CompiledKernel& ck : p.kernels) {
    if (!ck.cuda) continue;
    const codegen::CudaKernel& c = *ck.cuda;
    h = XXH64(c.source.data(), c.source.size(), h);
    cost.persistent = cost.persistent || c.persistent;
    cost.pingpong = cost.pingpong || c.consumer_teams > 1;
    cost.register_a = cost.register_a || codegen::has_register_a_loop(ck.kernel.body);
    cost.split_tail = cost.split_tail || codegen::has_split_tail_loop(ck.kernel.body);
    for (const codegen::CudaEpilogue& e : c.epilogues) cost.unstaged_epilogues += e.form == "paired";
    cost.shared_bytes = std::max(cost.shared_bytes, c.dynamic_shared_bytes);
    for (const codegen::CudaGemm& g : c.gemms) {
      const int regs = g.elems_per_thread * (g.dtype == "f64" ? 2 : 1);
      if (regs >= cost.accumulators) {
        cost.accumulators = regs;
        cost.blocks = c.grid;
        cost.threads = c.num_threads;
        cost.mma_threads = c.num_threads - c.producer_threads;
      }
    }
  }
  cost.fingerprint = h;
  if (max_shared_bytes > 0 && cost.shared_bytes > max_shared_bytes) {
    cost.why = fmt::format("{} bytes of shared memory (the limit is {})", cost.shared_bytes,
                           max_shared_bytes);
  } else if (cost.accumulators > max_accumulators) {
    cost.why = fmt::format("{} accumulator registers a thread (the limit is {})",
                           cost.accumulators, max_accumulators);
  } else {
    cost.feasible = true;
  }
  return cost;
}

bool same_kernels(const CompiledProgram& a, const CompiledProgram& b) {
  if (a.kernels.size() != b.kernels.size() || a.allow_tf32 != b.allow_tf32 ||
      a.target.name() != b.target.name())
    return false;
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    const CompiledKernel &x = a.kernels[i], &y = b.kernels[i];
    if (x.cuda.has_value() != y.cuda.has_value()) return false;
    if (x.cuda ? x.cuda->source != y.cuda->source : tir::print(x.kernel) != tir::print(y.kernel))
      return false;
  }
  return true;
}

}  // namespace tilefuse::driver
