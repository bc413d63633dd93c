// prefetch_prologue: a persistent kernel's producer stages the tile's index
// rows in shared memory through registers loaded a tile ahead; the
// prologue's statements read that tile instead of global memory.
#include <gtest/gtest.h>

#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;
using testing::options;
using testing::with_note;

// The seed's persistent GEMM: its prologue checks the tile's 128 index
// values and stages the in-range rows for the producer's gathered copies,
// each statement reading `index` (masked past M = 2000).
GemmText persistent_gather() {
  GemmText g = testing::gathered_gemm();
  g.launch.insert(g.launch.find(", tensor_maps"), ", persistent=1");
  g.prologue =
      "  for i_c in parallel(0, 128) {\n"
      "    let v = load(index, [pid_m*128 + i_c], mask=(pid_m*128 + i_c < 2000))\n"
      "    check(v >= 0_i64 && v < 2048_i64, code=1, msg=\"index {} out of range\", args=[v])\n"
      "  }\n"
      "  copy (r: 128) index_rows[r] = select(pid_m*128 + r < 2000, load(index, [pid_m*128 + r], "
      "mask=(pid_m*128 + r < 2000)), 0_i64) plan(register, width=8)\n";
  return g;
}

constexpr const char* kStaged =
    "  alloc index_tile: shared i64[128]\n"
    "  copy (i_pf: 128) index_tile[i_pf] = load(index, [pid_m*128 + i_pf], mask=(pid_m*128 + "
    "i_pf < 2000)) plan(register, width=8, slots=1, next_tile=1, reason=\"the persistent "
    "producer's index tile: loaded one tile ahead into 1 register(s) a thread, stored here at "
    "the start of its tile (prefetch_prologue)\")\n"
    "  for i_c in parallel(0, 128) {\n"
    "    let v = index_tile[i_c]\n"
    "    check(v >= 0_i64 && v < 2048_i64, code=1, msg=\"index {} out of range\", args=[v])\n"
    "  }\n"
    "  copy (r: 128) index_rows[r] = select(pid_m*128 + r < 2000, index_tile[r], 0_i64) "
    "plan(register, width=8)\n";

constexpr const char* kNote =
    "prologue prefetch: the producer loads tile t + 1's 128 rows of `index` into registers "
    "while tile t's copies run";

TEST(PrefetchPrologue, IndexLoadsReadTheStagedTile) {
  const GemmText in = persistent_gather();
  GemmText out = with_note(in, kNote);
  out.prologue = kStaged;
  expect_cuda_pass("prefetch_prologue", in.text(), out.text());
}

// Not persistent (each block runs one tile: nothing to load ahead), or the
// option off: unchanged.
TEST(PrefetchPrologue, OnlyPersistentKernels) {
  GemmText plain = persistent_gather();
  plain.launch.erase(plain.launch.find(", persistent=1"), 14);
  expect_cuda_pass("prefetch_prologue", plain.text(), plain.text());
  const GemmText in = persistent_gather();
  expect_cuda_pass("prefetch_prologue", in.text(), in.text(), options({"prologue_prefetch=0"}));
}

// Loads of two different tiles (another base) are not one staged tile: a
// note says why and nothing changes.
TEST(PrefetchPrologue, TwoTilesOfIndexNotStaged) {
  GemmText in = persistent_gather();
  in.prologue +=
      "  for i_d in parallel(0, 128) {\n"
      "    check(index[pid_m*128 + i_d + 1] >= 0_i64, code=1, msg=\"next\")\n"
      "  }\n";
  expect_cuda_pass(
      "prefetch_prologue", in.text(),
      with_note(in, "no prologue prefetch: the prologue's loads read more than one tile of memory")
          .text());
}

}  // namespace
}  // namespace tilefuse::codegen
