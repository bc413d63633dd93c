// The pass pipeline: a named table of passes (nvFuser's lower2device
// style), run in order with the verifier after each one, and the IR
// printed after any pass by name (`--dump-after=PASS`).
//
//   PassContext ctx{tir::Target::cpu()};
//   PipelineOptions opts;
//   opts.dump_after = "cse";
//   opts.dump = &std::cerr;
//   tir::Kernel k = run_passes(kernel, target_independent_passes(), ctx, opts);
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "passes/licm.h"
#include "passes/lower_copies.h"
#include "tir/ir.h"
#include "tir/target.h"

namespace tilefuse::passes {

// What passes report beyond the kernel, for explain: what licm hoisted and
// what lower_copies decided (in the order they ran).
struct PassReports {
  LicmReport licm;
  CopyReport copies;
};

// What a pass may need beyond the kernel. (inline_hooks' HookTable joins
// here when its entry is added.)
struct PassContext {
  tir::Target target;
  tir::CudaOptions cuda;           // the CUDA backend's switches
  PassReports* reports = nullptr;  // where reporting passes write; null: dropped
};

struct PassEntry {
  std::string_view name;  // what --dump-after names
  std::function<tir::Kernel(const tir::Kernel&, const PassContext&)> run;
  std::string_view why;  // why it sits where it sits
};

struct PipelineOptions {
  // A pass name, "all" (after every pass) or "" (never).
  std::string dump_after;
  // Runs tir::verify after every pass ("after <name>" in its message);
  // after a pass named inline_hooks, a hook left in the kernel is an error.
  bool verify = true;
  // Where dumps go; std::cerr when null.
  std::ostream* dump = nullptr;
};

// The passes every target runs first, in order (see pipeline.cpp for why
// each sits where it does).
const std::vector<PassEntry>& target_independent_passes();

// The CPU executor's passes, after those (lower_copies: `direct` copies;
// pack_gemm_operands: the gemm packs staged operands from their source).
// The CUDA backend's are codegen::cuda_passes() (codegen/cuda/passes.h).
const std::vector<PassEntry>& cpu_passes();

// The lower_copies entry (with its report into PassContext::reports), for
// the CPU table and the CUDA backend's.
tir::Kernel lower_copies_pass(const tir::Kernel& k, const PassContext& c);

// Runs `passes` in order. Each dump is a line `# after <name>` followed by
// the printed kernel. An unknown dump_after is a UserError that lists the
// valid names; a pass that produces malformed IR an InternalError naming it.
tir::Kernel run_passes(const tir::Kernel& kernel, const std::vector<PassEntry>& passes,
                       const PassContext& context, const PipelineOptions& options);

}  // namespace tilefuse::passes
