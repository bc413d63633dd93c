#include "driver/compile.h"

#include <algorithm>

#include "core/error.h"
#include "schedule/schedule.h"

namespace tilefuse::driver {
namespace {

using passes::PassEntry;

// The names lower_copies' table entry may carry: the pass file's name or
// the decision function's.
bool is_copy_decision(std::string_view name) {
  return name == "lower_copies" || name == "decide_copies";
}

}  // namespace

std::vector<PassEntry> compile_passes(CompiledKernel* kernel) {
  std::vector<PassEntry> passes = passes::target_independent_passes();
  // The table's licm and lower_copies entries drop their reports (a table
  // entry only maps a kernel to a kernel); explain needs them, so those two
  // entries are rerouted through the same functions with a report. Where the
  // table has no entry for one yet, it is placed in the slot pipeline.cpp
  // reserves for it: licm right after cse, lower_copies right after licm.
  auto find = [&](auto pred) {
    return std::find_if(passes.begin(), passes.end(),
                        [&](const PassEntry& e) { return pred(e.name); });
  };
  auto licm = find([](std::string_view n) { return n == "licm"; });
  if (licm == passes.end()) {
    auto cse = find([](std::string_view n) { return n == "cse"; });
    licm = passes.insert(cse == passes.end() ? passes.end() : cse + 1,
                         PassEntry{"licm", nullptr,
                                   "after cse: one let per repeated value is hoisted, on the "
                                   "loop extents simplify already decided"});
  }
  licm->run = [kernel](const tir::Kernel& k, const passes::PassContext&) {
    if (!kernel) return passes::hoist_loop_invariants(k);
    kernel->licm = {};
    return passes::hoist_loop_invariants(k, &kernel->licm);
  };
  auto copies = find(is_copy_decision);
  if (copies == passes.end()) {
    licm = find([](std::string_view n) { return n == "licm"; });
    copies =
        passes.insert(licm + 1, PassEntry{"lower_copies", nullptr,
                                          "after licm: contiguity and alignment are judged on the "
                                          "final, hoisted index expressions"});
  }
  copies->run = [kernel](const tir::Kernel& k, const passes::PassContext& ctx) {
    if (!kernel) return passes::decide_copies(k, ctx.target);
    kernel->copies = {};
    return passes::decide_copies(k, ctx.target, &kernel->copies);
  };
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
  program.plan = build_plan(graph, options.plan);
  std::vector<LoweredKernel> lowered = lower_plan(graph, program.plan, options.lower);

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
  }
  return program;
}

}  // namespace tilefuse::driver
