#include "driver/compile.h"

#include <algorithm>

#include "core/error.h"
#include "codegen/cuda/passes/passes.h"
#include "schedule/schedule.h"

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
      throw UserError("unknown pass '" + options.dump_after +
                      "' for --dump-after; valid names: " + valid + "all");
    }
  }

  CompiledProgram program;
  program.graph = graph;
  program.target = options.target;
  program.allow_tf32 = options.allow_tf32;
  program.specialization = options.lower.specialization;
  program.cuda = options.cuda;
  program.cuda.allow_tf32 = options.allow_tf32;
  program.plan = build_plan(graph, options.plan);
  LowerOptions lower_options = options.lower;
  lower_options.wgmma = options.target.has_wgmma();
  std::vector<LoweredKernel> lowered = lower_plan(graph, program.plan, lower_options);

  passes::PassContext context{options.target, program.cuda};
  const std::vector<PassEntry> table = compile_passes(options.target);
  passes::PipelineOptions pipeline;
  pipeline.dump_after = options.dump_after;
  pipeline.dump = options.dump;
  program.kernels.resize(lowered.size());
  for (size_t i = 0; i < lowered.size(); ++i) {
    CompiledKernel& ck = program.kernels[i];
    ck.lowered = std::move(lowered[i]);
    passes::PassReports reports;
    context.reports = &reports;
    ck.kernel = options.optimize ? passes::run_passes(ck.lowered.kernel, table, context, pipeline)
                                 : ck.lowered.kernel;
    ck.licm = std::move(reports.licm);
    ck.copies = std::move(reports.copies);
    if (options.optimize && options.target.is_cuda())
      ck.cuda = codegen::emit_cuda(ck.kernel, options.target);
  }
  return program;
}

}  // namespace tilefuse::driver
