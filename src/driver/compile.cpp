#include "driver/compile.h"

#include <algorithm>

#include "core/error.h"
#include "schedule/schedule.h"

namespace tilefuse::driver {
using passes::PassEntry;

std::vector<PassEntry> compile_passes(CompiledKernel* kernel) {
  std::vector<PassEntry> passes = passes::target_independent_passes();
  // A table entry only maps a kernel to a kernel, so licm's and
  // lower_copies' reports are dropped there; explain needs them, so those
  // two entries run the same functions with a report into `kernel`.
  bool licm = false, copies = false;
  for (PassEntry& p : passes) {
    if (p.name == "licm") {
      licm = true;
      p.run = [kernel](const tir::Kernel& k, const passes::PassContext&) {
        if (!kernel) return passes::hoist_loop_invariants(k);
        kernel->licm = {};
        return passes::hoist_loop_invariants(k, &kernel->licm);
      };
    } else if (p.name == "lower_copies") {
      copies = true;
      p.run = [kernel](const tir::Kernel& k, const passes::PassContext& ctx) {
        if (!kernel) return passes::decide_copies(k, ctx.target);
        kernel->copies = {};
        return passes::decide_copies(k, ctx.target, &kernel->copies);
      };
    }
  }
  TF_CHECK(licm && copies, "the pass table has no licm or no lower_copies entry");
  return passes;
}

std::vector<std::string> pass_names() {
  std::vector<std::string> names;
  for (const PassEntry& p : compile_passes(nullptr)) names.emplace_back(p.name);
  return names;
}

CompiledProgram compile(const Graph& graph, const CompileOptions& options) {
  // An unknown --dump-after is a user error even for a program with no
  // kernel (run_passes would only see it on the first kernel).
  if (!options.dump_after.empty() && options.dump_after != "all") {
    const std::vector<std::string> names = pass_names();
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
  program.plan = build_plan(graph, options.plan);
  LowerOptions lower_options = options.lower;
  lower_options.wgmma = options.target.has_wgmma();
  std::vector<LoweredKernel> lowered = lower_plan(graph, program.plan, lower_options);

  passes::PassContext context{options.target};
  passes::PipelineOptions pipeline;
  pipeline.dump_after = options.dump_after;
  pipeline.dump = options.dump;
  program.kernels.resize(lowered.size());
  for (size_t i = 0; i < lowered.size(); ++i) {
    CompiledKernel& ck = program.kernels[i];
    ck.lowered = std::move(lowered[i]);
    ck.kernel = options.optimize
                    ? passes::run_passes(ck.lowered.kernel, compile_passes(&ck), context, pipeline)
                    : ck.lowered.kernel;
    if (options.optimize && options.target.is_cuda() && !ck.lowered.scalars.empty())
      throw UserError(
          "symbolic dims on a CUDA target are not supported yet (the CUDA emitter takes "
          "constant shapes); run them on the CPU, or give the dims fixed sizes");
    if (options.optimize && options.target.is_cuda())
      ck.cuda = codegen::emit_cuda(ck.kernel, options.target,
                                   codegen::EmitOptions{.allow_tf32 = options.allow_tf32});
  }
  return program;
}

}  // namespace tilefuse::driver
