#include "tir/target.h"

namespace tilefuse::tir {

std::string CudaOptions::key() const {
  const CudaOptions defaults;
  std::string k;
#define TF_CUDA_OPTION_KEY(name, dflt, help) \
  if (name != defaults.name) k += (k.empty() ? "" : ",") + std::string(#name) + (name ? "=1" : "=0");
  TILEFUSE_FOR_EACH_CUDA_OPTION(TF_CUDA_OPTION_KEY)
#undef TF_CUDA_OPTION_KEY
  return k;
}

bool CudaOptions::set(std::string_view assignment, std::string* error) {
  const size_t eq = assignment.find('=');
  const std::string_view name = assignment.substr(0, eq);
  const std::string_view value = eq == std::string_view::npos ? "" : assignment.substr(eq + 1);
  bool v = false;
  // Exactly 0 or 1, as --help says (no other spelling of a boolean is
  // accepted anywhere in the CLI's option values).
  if (value == "1") {
    v = true;
  } else if (value != "0") {
    *error = "a CUDA option is NAME=0 or NAME=1, got `" + std::string(assignment) + "`";
    return false;
  }
#define TF_CUDA_OPTION_SET(field, dflt, help) \
  if (name == #field) {                       \
    field = v;                                \
    return true;                              \
  }
  TILEFUSE_FOR_EACH_CUDA_OPTION(TF_CUDA_OPTION_SET)
#undef TF_CUDA_OPTION_SET
  std::string names;
  for (const Info& i : all()) names += (names.empty() ? "" : ", ") + std::string(i.name);
  *error = "unknown CUDA option `" + std::string(name) + "` (options: " + names + ")";
  return false;
}

std::vector<CudaOptions::Info> CudaOptions::all() {
  return {
#define TF_CUDA_OPTION_INFO(name, dflt, help) {#name, dflt, help},
      TILEFUSE_FOR_EACH_CUDA_OPTION(TF_CUDA_OPTION_INFO)
#undef TF_CUDA_OPTION_INFO
  };
}

}  // namespace tilefuse::tir
