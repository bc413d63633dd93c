#include "tir/plan.h"

#include <type_traits>

#include "tir/ir.h"  // (plan.h holds Exprs: their nodes must be complete)

namespace tilefuse::tir {

#define TF_TIR_NAME_FN(fn, Enum, LIST)      \
  std::string_view fn(Enum v) {             \
    switch (v) {                            \
      LIST(TF_TIR_NAME_CASE)                \
    }                                       \
    return "?";                             \
  }
#define TF_TIR_NAME_CASE(name, text) \
  case std::remove_cvref_t<decltype(v)>::name: \
    return text;

TF_TIR_NAME_FN(copy_mechanism_name, CopyMechanism, TILEFUSE_FOR_EACH_COPY_MECHANISM)
TF_TIR_NAME_FN(shared_layout_name, SharedLayout, TILEFUSE_FOR_EACH_SHARED_LAYOUT)
TF_TIR_NAME_FN(mma_family_name, MmaFamily, TILEFUSE_FOR_EACH_MMA_FAMILY)
TF_TIR_NAME_FN(pipeline_form_name, PipelineForm, TILEFUSE_FOR_EACH_PIPELINE_FORM)
TF_TIR_NAME_FN(epilogue_form_name, EpilogueForm, TILEFUSE_FOR_EACH_EPILOGUE_FORM)
TF_TIR_NAME_FN(barrier_kind_name, BarrierKind, TILEFUSE_FOR_EACH_BARRIER_KIND)

#undef TF_TIR_NAME_CASE
#undef TF_TIR_NAME_FN

std::string warp_slab_buffers_words(int n) {
  const std::string bytes = std::to_string(kWarpSlabBytes) + "-byte buffer";
  if (n == 1) return "a " + bytes;
  return (n == 2 ? std::string("two") : std::to_string(n)) + " " + bytes + "s";
}

}  // namespace tilefuse::tir
