// epilogue: a split-K kernel's workspace nest stores the partial tile in the
// accumulators' fragment order (LaunchPlan::workspace_fragment_order), and
// the fix-up's sum nest reads it back at its own elements into the
// accumulators (per element), whose epilogue is then staged like any other;
// otherwise the workspace is an ordinary output of the nest.
#include <gtest/gtest.h>

#include <string>

#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::options;

// `tilefuse emit mm.tfs --stage=tir-opt --target sm_90a --gemm-config
// 64x128x64/3/4/splitk2 --dump-after=layout` of x: f16[64, 512] @ w:
// f16[512, 128] (two K splits of one tile).
const char* const kSplit = R"TIR(kernel gemm0(
  x: global readonly f16[64, 512] strides [512, 1] align 16,
  w: global readonly f16[512, 128] strides [128, 1] align 16,
  t2: global f16[64, 128] strides [128, 1] align 16,
  splitk_workspace: global f32[2, 1, 64, 128] align 16,
  splitk_counters: global i32[1] align 16,
) grid(pid_k: 2, pid: 1) attrs(BLOCK_K = 64, BLOCK_M = 64, BLOCK_N = 128, GROUP_M = 8, SPLIT_K = 2, num_stages = 3, num_warps = 4) plan(threads=256, consumer_threads=128, shared_bytes=73776, shared_align=1024, async_barriers=1, tensor_maps=[(param=0, elem=2, dims=[512, 64], strides=[1024], box=[64, 64], swizzle=128), (param=1, elem=2, dims=[128, 512], strides=[256], box=[64, 64], swizzle=128)], notes=["warp-specialized: warpgroup 1 issues the copies (mbarrier pipeline), warpgroups 0..0 run wgmma", "no register budgets (setmaxnreg): a 256-thread block (budgets are set for two MMA warpgroups)"]) {
  alloc A_s: shared f16[64, 64] plan(swizzled, stages=3, offset=0, bytes=24576)
  alloc B_s: shared f16[64, 128] plan(mn_swizzled, stages=3, offset=24576, bytes=49152)
  alloc C_f: fragment f32[64, 128] plan(wgmma, operand=f16, block=[64, 128, 64], warps=[1, 1])
  fill(C_f, 0.0)
  for k in pipelined(0, 4, stages=3) plan(warp_specialized, stages=3, issue_ahead=3, wgmma_in_flight=1, producer_threads=128, consumer_threads=128, mbarriers=73728) {
    let cse = (pid_k*4 + k)*64
    copy (i: 64, j: 64) A_s[i, j] = x[i, cse + j] plan(tma, width=16, map=0, boxes=[({cse}, {0}, smem=0)], bytes=8192, reason="affine 64x64 tile of x, 16-byte aligned base and strides: TMA")
    copy (i_1: 64, j_1: 128) B_s[i_1, j_1] = w[cse + i_1, pid*128 + j_1] plan(tma, width=16, map=1, boxes=[({pid*128}, {cse}, smem=0), ({pid*128 + 64}, {cse}, smem=4096)], bytes=16384, reason="affine 64x128 tile of w, 16-byte aligned base and strides: TMA")
    gemm(A_s, B_s, C_f)
  }
  for i_2 in parallel(0, 64) {
    for j_2 in parallel(0, 128) {
      splitk_workspace[pid_k, pid, i_2, j_2] = C_f[i_2, j_2]
    }
  }
  if_last_arrival(splitk_counters[pid], 2) {
    for i_3 in parallel(0, 64) {
      for j_3 in parallel(0, 128) {
        let cse_1 = C_f[i_3, j_3]
        C_f[i_3, j_3] = select(pid_k == 0, cse_1, load(splitk_workspace, [0, pid, i_3, j_3], mask=(pid_k != 0))) + select(pid_k == 1, cse_1, load(splitk_workspace, [1, pid, i_3, j_3], mask=(pid_k != 1)))
      }
    }
    for i_4 in parallel(0, 64) {
      for j_4 in parallel(0, 128) {
        let n = pid*128 + j_4
        t2[i_4, n] = f16(C_f[i_4, j_4])
      }
    }
  }
}
)TIR";

// The same after epilogue.
const char* const kSplitPlanned = R"TIR(kernel gemm0(
  x: global readonly f16[64, 512] strides [512, 1] align 16,
  w: global readonly f16[512, 128] strides [128, 1] align 16,
  t2: global f16[64, 128] strides [128, 1] align 16,
  splitk_workspace: global f32[2, 1, 64, 128] align 16,
  splitk_counters: global i32[1] align 16,
) grid(pid_k: 2, pid: 1) attrs(BLOCK_K = 64, BLOCK_M = 64, BLOCK_N = 128, GROUP_M = 8, SPLIT_K = 2, num_stages = 3, num_warps = 4) plan(threads=256, consumer_threads=128, shared_bytes=91136, shared_align=1024, async_barriers=1, workspace_fragment_order=3, workspace_vector=4, tensor_maps=[(param=0, elem=2, dims=[512, 64], strides=[1024], box=[64, 64], swizzle=128), (param=1, elem=2, dims=[128, 512], strides=[256], box=[64, 64], swizzle=128), (param=2, elem=2, dims=[128, 64], strides=[256], box=[64, 16], swizzle=128)], notes=["warp-specialized: warpgroup 1 issues the copies (mbarrier pipeline), warpgroups 0..0 run wgmma", "no register budgets (setmaxnreg): a 256-thread block (budgets are set for two MMA warpgroups)", "epilogue into splitk_workspace: split-K partials in the accumulators' fragment order (4 elements of a thread a 16-byte access, element e of thread t at ((e / 4) * threads + t) * 4 + e % 4 of its slice: coalesced, not staged)", "epilogue into t2: staged through shared memory per warp by stmatrix (each MMA warp its own 16-row slabs, 64 columns at a time in two 2048-byte buffers of its own; no block barrier), f32 pairs cast together, stored by TMA (a 128-byte swizzled box a slab, from the warp's lane 0)"]) {
  alloc A_s: shared f16[64, 64] plan(swizzled, stages=3, offset=0, bytes=24576)
  alloc B_s: shared f16[64, 128] plan(mn_swizzled, stages=3, offset=24576, bytes=49152)
  alloc C_f: fragment f32[64, 128] plan(wgmma, operand=f16, block=[64, 128, 64], warps=[1, 1])
  fill(C_f, 0.0)
  for k in pipelined(0, 4, stages=3) plan(warp_specialized, stages=3, issue_ahead=3, wgmma_in_flight=1, producer_threads=128, consumer_threads=128, mbarriers=73728) {
    let cse = (pid_k*4 + k)*64
    copy (i: 64, j: 64) A_s[i, j] = x[i, cse + j] plan(tma, width=16, map=0, boxes=[({cse}, {0}, smem=0)], bytes=8192, reason="affine 64x64 tile of x, 16-byte aligned base and strides: TMA")
    copy (i_1: 64, j_1: 128) B_s[i_1, j_1] = w[cse + i_1, pid*128 + j_1] plan(tma, width=16, map=1, boxes=[({pid*128}, {cse}, smem=0), ({pid*128 + 64}, {cse}, smem=4096)], bytes=16384, reason="affine 64x128 tile of w, 16-byte aligned base and strides: TMA")
    gemm(A_s, B_s, C_f)
  }
  for i_2 in parallel(0, 64) plan(fragment_order) {
    for j_2 in parallel(0, 128) {
      splitk_workspace[pid_k, pid, i_2, j_2] = C_f[i_2, j_2]
    }
  }
  if_last_arrival(splitk_counters[pid], 2) {
    for i_3 in parallel(0, 64) plan(per_element) {
      for j_3 in parallel(0, 128) {
        let cse_1 = C_f[i_3, j_3]
        C_f[i_3, j_3] = select(pid_k == 0, cse_1, load(splitk_workspace, [0, pid, i_3, j_3], mask=(pid_k != 0))) + select(pid_k == 1, cse_1, load(splitk_workspace, [1, pid, i_3, j_3], mask=(pid_k != 1)))
      }
    }
    for i_4 in parallel(0, 64) plan(staged, stmatrix=1, contiguous_chunks=1, pair_cast=1, offset=74752, tma_store=2, per_warp=1, slab_buffers=2) {
      for j_4 in parallel(0, 128) {
        let n = pid*128 + j_4
        t2[i_4, n] = f16(C_f[i_4, j_4])
      }
    }
  }
}
)TIR";

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(SplitKWorkspace, PartialsInFragmentOrder) {
  expect_cuda_pass("epilogue", kSplit, kSplitPlanned);
}

// A workspace read where no thread owns the element (a load outside the
// nests) keeps its row-major layout: the nest is staged like any output.
TEST(SplitKWorkspace, ReadOutsideTheNestsKeepsTheLayout) {
  const std::string extra = "  evaluate(splitk_workspace[0, 0, 0, 0])\n  if_last_arrival";
  const std::string in = replaced(kSplit, "  if_last_arrival", extra);
  std::string out = replaced(kSplitPlanned, "  if_last_arrival", extra);
  out = replaced(out, "async_barriers=1, workspace_fragment_order=3, workspace_vector=4,",
                 "async_barriers=1,");
  out = replaced(out, "plan(fragment_order)", "plan(staged, pitch=132, contiguous_chunks=1)");
  out = replaced(out,
                 "\"epilogue into splitk_workspace: split-K partials in the accumulators' "
                 "fragment order (4 elements of a thread a 16-byte access, element e of thread "
                 "t at ((e / 4) * threads + t) * 4 + e % 4 of its slice: coalesced, not "
                 "staged)\"",
                 "\"epilogue into splitk_workspace: staged through shared memory, stored in 16-byte "
                 "row chunks (proved contiguous and aligned)\"");
  expect_cuda_pass("epilogue", in, out);
}

// split_k_cluster: the split becomes the grid's fastest dim and the
// cluster's shape; the statements stay (the printer reads the plan).
TEST(SplitKCluster, TheSplitsOfATileFormACluster) {
  std::string out = replaced(kSplitPlanned, "grid(pid_k: 2, pid: 1)", "grid(pid: 1, pid_k: 2)");
  out = replaced(out, "async_barriers=1, workspace_fragment_order=3, workspace_vector=4,",
                 "async_barriers=1, cluster=2, workspace_fragment_order=3, workspace_vector=4, "
                 "split_k_cluster=1,");
  out = replaced(
      out, "stored by TMA (a 128-byte swizzled box a slab, from the warp's lane 0)\"]",
      "stored by TMA (a 128-byte swizzled box a slab, from the warp's lane 0)\", \"split-K in a "
      "cluster of 2 blocks (a tile's K splits, split s = rank s): each stores its 32768-byte "
      "partial tile in its own shared memory over the dead operand rings, and MMA warp w of the "
      "block of split w % 2 sums warp w's elements over the cluster in split order "
      "(ld.shared::cluster) and runs their epilogue; no workspace, no counter\"]");
  expect_cuda_pass("split_k_cluster", kSplitPlanned, out, options({"split_k_cluster=1"}));
}

TEST(SplitKCluster, OptionOffLeavesTheKernel) {
  expect_cuda_pass("split_k_cluster", kSplitPlanned, kSplitPlanned);
}

// Where the kernel cannot, a note says why and nothing else changes.
std::string with_split_note(const std::string& planned, const std::string& why) {
  return replaced(planned,
                  "stored by TMA (a 128-byte swizzled box a slab, from the warp's lane 0)\"]",
                  "stored by TMA (a 128-byte swizzled box a slab, from the warp's lane 0)\", "
                  "\"split-K through the workspace, not a cluster: " +
                      why + "\"]");
}

TEST(SplitKCluster, AWholeTileStagedEpilogueKeepsTheWorkspace) {
  // (Its block barriers need every warp, and only a share of them runs it.)
  const std::string in = replaced(
      kSplitPlanned, "plan(staged, stmatrix=1, contiguous_chunks=1, pair_cast=1, offset=74752, "
                     "tma_store=2, per_warp=1, slab_buffers=2)",
      "plan(staged, pitch=136, contiguous_chunks=1, pair_cast=1)");
  expect_cuda_pass(
      "split_k_cluster", in,
      with_split_note(in, "an epilogue staged through a whole-tile buffer (its block barriers "
                          "need every warp)"),
      options({"split_k_cluster=1"}));
}

TEST(SplitKCluster, MoreThanEightSplitsKeepTheWorkspace) {
  const std::string in = replaced(kSplitPlanned, "SPLIT_K = 2", "SPLIT_K = 9");
  expect_cuda_pass(
      "split_k_cluster", in,
      with_split_note(in, "9 splits (a portable cluster holds at most 8 blocks)"),
      options({"split_k_cluster=1"}));
}

}  // namespace
}  // namespace tilefuse::codegen
