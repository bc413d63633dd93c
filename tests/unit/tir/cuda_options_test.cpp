// The CUDA backend's switches (tir::CudaOptions): parsing `NAME=0|1`, the
// key the caches use, and README.md's table of them, which must list every
// option with its default.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

#include "tir/target.h"

namespace tilefuse::tir {
namespace {

TEST(CudaOptions, SetParsesNameEqualsZeroOrOneAndNamesWhatItRefuses) {
  CudaOptions o;
  std::string error;
  EXPECT_TRUE(o.set("register_a=1", &error)) << error;
  EXPECT_TRUE(o.register_a);
  EXPECT_TRUE(o.set("wgmma=0", &error)) << error;
  EXPECT_FALSE(o.wgmma);
  EXPECT_EQ(o.key(), "wgmma=0,register_a=1");
  EXPECT_FALSE(o.set("no_such_switch=1", &error));
  EXPECT_NE(error.find("unknown CUDA option `no_such_switch`"), std::string::npos) << error;
  EXPECT_FALSE(o.set("wgmma=true", &error));
  EXPECT_NE(error.find("got `wgmma=true`"), std::string::npos) << error;
  EXPECT_EQ(CudaOptions().key(), "");
}

// README.md's table under "| option | default | what it turns |": one row
// per option, with the option's default, and no row for a name that is
// not an option.
TEST(CudaOptions, ReadmeTableListsEveryOptionWithItsDefault) {
  std::ifstream in(std::string(TILEFUSE_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(in.good());
  std::map<std::string, std::string> rows;  // name -> default cell
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "| option | default | what it turns |") {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (line.rfind("|---", 0) == 0) continue;
    if (line.rfind("| ", 0) != 0) break;  // the table's end
    const size_t a = line.find(" | ", 2);
    const size_t b = line.find(" | ", a + 3);
    ASSERT_NE(b, std::string::npos) << line;
    EXPECT_TRUE(rows.emplace(line.substr(2, a - 2), line.substr(a + 3, b - a - 3)).second)
        << "listed twice: " << line;
  }
  ASSERT_FALSE(rows.empty()) << "no option table in README.md";
  for (const CudaOptions::Info& info : CudaOptions::all()) {
    const auto it = rows.find(info.name);
    if (it == rows.end()) {
      ADD_FAILURE() << "README.md's option table has no row for " << info.name;
      continue;
    }
    EXPECT_EQ(it->second, info.default_value ? "1" : "0") << info.name;
    rows.erase(it);
  }
  for (const auto& [name, dflt] : rows) ADD_FAILURE() << "README.md lists a non-option: " << name;
}

}  // namespace
}  // namespace tilefuse::tir
