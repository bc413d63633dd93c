// The pass table. Order matters; each entry says why it is where it is.
//
// inline_hooks is not in the table: it needs the hook callbacks lower/
// makes from a plan step, so lower_plan runs it (lower.h) and the table
// starts on kernels without hooks. Its slot stays first: every pass here
// may assume no hooks, and only after it do the prologues' loads and index
// math exist for the clean-up passes to see. axis_info is an analysis that
// lower_copies runs, not a pass.
#include "passes/pipeline.h"

#include <iostream>

#include "core/error.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/licm.h"
#include "passes/lower_copies.h"
#include "passes/pack_gemm_operands.h"
#include "passes/simplify.h"
#include "tir/printer.h"
#include "tir/verifier.h"

namespace tilefuse::passes {

const std::vector<PassEntry>& target_independent_passes() {
  static const std::vector<PassEntry> kPasses = {
      {"simplify", [](const tir::Kernel& k, const PassContext&) { return simplify(k); },
       "folds the template's constant tile arithmetic and decides masks and loop trips first, "
       "so cse and licm compare canonical expressions"},
      {"cse",
       [](const tir::Kernel& k, const PassContext&) { return eliminate_common_subexpressions(k); },
       "binds each repeated index or loaded value once, after simplify made equal "
       "expressions look equal"},
      {"licm",
       [](const tir::Kernel& k, const PassContext& c) {
         if (!c.reports) return hoist_loop_invariants(k);
         c.reports->licm = {};
         return hoist_loop_invariants(k, &c.reports->licm);
       },
       "after cse: each repeated value is bound once, so licm hoists one let instead of several "
       "copies, and simplify has already decided the loop extents it guards with"},
      {"dce", [](const tir::Kernel& k, const PassContext&) { return eliminate_dead_code(k); },
       "last of the target-independent passes: removes the lets, empty loops and branches the "
       "passes before it left behind, so the backend sees the final statements"},
  };
  return kPasses;
}

tir::Kernel lower_copies_pass(const tir::Kernel& k, const PassContext& c) {
  if (!c.reports) return decide_copies(k, c.target, c.cuda);
  c.reports->copies = {};
  return decide_copies(k, c.target, c.cuda, &c.reports->copies);
}

const std::vector<PassEntry>& cpu_passes() {
  static const std::vector<PassEntry> kPasses = {
      {"lower_copies", lower_copies_pass,
       "after licm and dce: the copies the executor runs are final; on the CPU every copy is "
       "`direct`"},
      {"pack_gemm_operands",
       [](const tir::Kernel& k, const PassContext& c) {
         return pack_gemm_operands(k, c.reports ? &c.reports->copies : nullptr);
       },
       "after lower_copies (it re-plans `direct` copies): a staged gemm operand becomes "
       "`gemm_pack`, packed by the gemm from its source, once the statements around it are "
       "final"},
  };
  return kPasses;
}

tir::Kernel run_passes(const tir::Kernel& kernel, const std::vector<PassEntry>& passes,
                       const PassContext& context, const PipelineOptions& options) {
  const std::string& dump = options.dump_after;
  if (!dump.empty() && dump != "all") {
    bool known = false;
    std::string names;
    for (const PassEntry& p : passes) {
      known |= p.name == dump;
      names += (names.empty() ? "" : ", ") + std::string(p.name);
    }
    if (!known) {
      throw UserError("unknown pass '" + dump + "' for --dump-after; valid names: " + names +
                      ", all");
    }
  }
  std::ostream& out = options.dump ? *options.dump : std::cerr;
  tir::Kernel k = kernel;
  // Hooks are legal until inline_hooks has run; from then on one is a bug.
  tir::VerifyOptions verify_options;
  for (const PassEntry& p : passes) {
    k = p.run(k, context);
    if (p.name == "inline_hooks") verify_options.allow_hooks = false;
    if (options.verify) tir::verify(k, "after " + std::string(p.name), verify_options);
    if (dump == "all" || dump == p.name) out << "# after " << p.name << "\n" << tir::print(k);
  }
  return k;
}

}  // namespace tilefuse::passes
