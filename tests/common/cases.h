// The programs every backend must run: tests/cases/*.tfs and examples/*.tfs.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace tilefuse::testing {

// Every tests/cases/*.tfs and examples/*.tfs (full paths), sorted.
inline std::vector<std::string> shared_cases() {
  std::vector<std::string> out;
  for (const char* dir : {"tests/cases", "examples"})
    for (const auto& e :
         std::filesystem::directory_iterator(std::string(TILEFUSE_SOURCE_DIR) + "/" + dir))
      if (e.path().extension() == ".tfs") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tilefuse::testing
