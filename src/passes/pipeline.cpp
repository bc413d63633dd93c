// The pass table. Order matters; each entry says why it is where it is.
//
// Slots for the passes other files add (declared here, not yet referenced):
//   inline_hooks   (first)       expands load_input / store_output; every
//                                later pass may assume no hooks, and only
//                                after it do the prologues' loads and index
//                                math exist for the clean-up passes to see.
//   licm           (after cse)   CSE has bound each repeated value once, so
//                                LICM hoists one let instead of several
//                                copies, and simplify has already decided
//                                the loop extents it guards with.
//   axis_info /    (after licm)  contiguity/divisibility are judged on the
//   lower_copies                 final, hoisted index expressions; the copy
//                                decision is target-aware (PassContext).
#include "passes/pipeline.h"

#include <iostream>

#include "core/error.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/simplify.h"
#include "tir/printer.h"
#include "tir/verifier.h"

namespace tilefuse::passes {

const std::vector<PassEntry>& target_independent_passes() {
  static const std::vector<PassEntry> kPasses = {
      // <- inline_hooks goes here (first).
      {"simplify", [](const tir::Kernel& k, const PassContext&) { return simplify(k); },
       "folds the template's constant tile arithmetic and decides masks and loop trips first, "
       "so cse and licm compare canonical expressions"},
      {"cse",
       [](const tir::Kernel& k, const PassContext&) { return eliminate_common_subexpressions(k); },
       "binds each repeated index or loaded value once, after simplify made equal "
       "expressions look equal"},
      // <- licm goes here (after cse).
      // <- axis_info / lower_copies go here (after licm).
      {"dce", [](const tir::Kernel& k, const PassContext&) { return eliminate_dead_code(k); },
       "last: removes the lets, empty loops and branches the passes before it left behind"},
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
