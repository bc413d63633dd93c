// timeline (mark_timeline): with CudaOptions::block_timeline the launch plan
// places the timeline's 32-byte slot after every other shared byte, 8-byte
// aligned (timeline_slot=, shared_bytes grown by the slot) and a note says
// so; without it the kernel is unchanged.
#include <gtest/gtest.h>

#include <string>

#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;

// `in` with its launch's `shared_bytes=<from>` made `shared_bytes=<to>`.
GemmText with_shared_bytes(GemmText in, int64_t from, int64_t to) {
  const std::string old = "shared_bytes=" + std::to_string(from);
  const size_t at = in.launch.find(old);
  EXPECT_NE(at, std::string::npos) << in.launch;
  if (at != std::string::npos)
    in.launch.replace(at, old.size(), "shared_bytes=" + std::to_string(to));
  return in;
}

// `in` as the timeline pass leaves it: the slot at `slot`, the shared bytes
// `shared` (the slot's end), the note.
constexpr const char* kNote =
    "block timeline: each block's thread 0 keeps its start, its first stage landed and the ends "
    "of its first two main loops (%globaltimer) in shared memory, then records them, its end "
    "and its SM into tf_timeline (a measuring aid: 32 bytes of shared memory, no register held "
    "across the main loop)";

GemmText with_timeline(const GemmText& in, int64_t shared_in, int64_t slot) {
  GemmText out = testing::with_note(with_shared_bytes(in, shared_in, slot + 32), kNote);
  // (timeline_slot prints after the plan's numbers, before its lists)
  const size_t at = out.launch.find(", tensor_maps=");
  EXPECT_NE(at, std::string::npos) << out.launch;
  if (at != std::string::npos) out.launch.insert(at, ", timeline_slot=" + std::to_string(slot));
  return out;
}

TEST(Timeline, PlacesItsSlotOnlyWhenAsked) {
  const GemmText in = testing::wgmma_gemm("sync");  // shared_bytes=132096
  expect_cuda_pass("timeline", in.text(), in.text());
  expect_cuda_pass("timeline", in.text(), with_timeline(in, 132096, 132096).text(),
                   testing::options({"block_timeline=1"}));
}

// Shared bytes that end off an 8-byte boundary: the slot starts at the next
// one (its u64 words need it), and the bytes skipped count.
TEST(Timeline, AlignsItsSlotToEightBytes) {
  const GemmText in = with_shared_bytes(testing::wgmma_gemm("sync"), 132096, 132100);
  expect_cuda_pass("timeline", in.text(), with_timeline(in, 132100, 132104).text(),
                   testing::options({"block_timeline=1"}));
}

// The layout pass places the slot right after the mbarriers (before the
// regions later passes align after everything), and the timeline pass then
// only notes it.
TEST(Timeline, LayoutPlacesTheSlotAfterTheMbarriers) {
  const GemmText in = testing::wgmma_gemm("register_budgets");
  GemmText out = with_shared_bytes(testing::wgmma_gemm("layout"), 98352, 98384);
  const size_t at = out.launch.find(", tensor_maps=");
  ASSERT_NE(at, std::string::npos) << out.launch;
  out.launch.insert(at, ", timeline_slot=98352");
  expect_cuda_pass("layout", in.text(), out.text(), testing::options({"block_timeline=1"}));
  GemmText placed = with_shared_bytes(testing::wgmma_gemm("sync"), 132096, 132128);
  placed.launch.insert(placed.launch.find(", tensor_maps="), ", timeline_slot=98352");
  expect_cuda_pass("timeline", placed.text(), testing::with_note(placed, kNote).text(),
                   testing::options({"block_timeline=1"}));
}

}  // namespace
}  // namespace tilefuse::codegen
