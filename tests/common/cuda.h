// Helpers of the CUDA runtime tests (tests/unit/runtime): skips without
// libnvrtc or without a GPU, a fake environment for the library search, and
// a real shared library that is not CUDA.
#pragma once

#include <gtest/gtest.h>
#include <link.h>

#include <map>
#include <memory>
#include <string>

#include "runtime/cuda/loader.h"
#include "runtime/cuda/nvrtc.h"

// No libnvrtc: a skip with the reason.
#define SKIP_WITHOUT_NVRTC()                                                  \
  do {                                                                        \
    std::string why_;                                                         \
    if (::tilefuse::cuda::load_nvrtc(&why_) == nullptr) GTEST_SKIP() << why_; \
  } while (0)

// No usable GPU (no driver, no device): a skip with the reason.
#define SKIP_WITHOUT_GPU()                                              \
  do {                                                                  \
    std::string why_;                                                   \
    if (!::tilefuse::cuda::cuda_available(&why_)) GTEST_SKIP() << why_; \
  } while (0)

namespace tilefuse::testing {

// A fake environment: only the given variables are set.
inline cuda::EnvGetter fake_env(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

// The path of the libm this process has loaded (a real shared library that is
// not CUDA), falling back to Debian's usual place.
inline std::string libm_path() {
  std::string found;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) -> int {
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (name.find("/libm.so") != std::string::npos) {
          *static_cast<std::string*>(data) = name;
          return 1;
        }
        return 0;
      },
      &found);
  return found.empty() ? "/lib/x86_64-linux-gnu/libm.so.6" : found;
}

}  // namespace tilefuse::testing
