// sync (place_barriers): the block barriers outside the pipelined loops'
// own: around synchronous copies and before staged epilogues; each
// barrier's kind; the redundant ones removed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cuda_pass_test.h"

namespace tilefuse::codegen {
namespace {

using testing::expect_cuda_pass;
using testing::GemmText;

// A kernel around `body` with the launch plan `launch`: x (f16[4096]) in,
// out (f16[4096]) out, grid p over 32 blocks, shared tiles s and t of 128
// f16 each.
std::string kernel(const std::string& body,
                   const std::string& launch = "threads=128, shared_bytes=512, shared_align=128") {
  return "kernel k(\n  x: global readonly f16[4096] strides [1] align 16,\n"
         "  out: global f16[4096] strides [1] align 16,\n) grid(p: 32) plan(" +
         launch +
         ") {\n  alloc s: shared f16[128] plan(row_major, stages=1, offset=0, bytes=256)\n"
         "  alloc t: shared f16[128] plan(row_major, stages=1, offset=256, bytes=256)\n" +
         body + "}\n";
}

// A parallel loop (over `v`) writing s, or reading it.
std::string write_s(const char* v = "i") {
  return fmt::format("  for {0} in parallel(0, 128) {{\n    s[{0}] = x[p*128 + {0}]\n  }}\n", v);
}
std::string read_s(const char* v = "i_1") {
  return fmt::format("  for {0} in parallel(0, 128) {{\n    out[p*128 + {0}] = s[{0}]\n  }}\n", v);
}
// A synchronous (register-staged) copy into `tile` over `v`.
std::string copy_into(const char* tile, const char* v) {
  return fmt::format("  copy ({1}: 128) {0}[{1}] = x[p*128 + {1}] plan(register, width=2)\n", tile,
                     v);
}

// The sync pass's plan for a loop whose ring is all TMA copies and whose
// producer runs nothing else: one producer thread (single_issuer), and no
// fence.proxy.async in the MMA warpgroups (consumer_fence=0: only the async
// proxy writes the ring).
GemmText single_issuer(GemmText g) {
  g.loop_plan.insert(g.loop_plan.find(", mbarriers="), ", single_issuer=1, consumer_fence=0");
  return g;
}

// Two barriers with no shared-memory access between them: the second goes.
TEST(Sync, RemovesABarrierWithNoSharedAccessSinceThePrevious) {
  const std::string no_shared = "  let q = p*2\n  out[q] = x[q]\n";
  expect_cuda_pass("sync",
                   kernel(write_s() + "  barrier()\n" + no_shared + "  barrier()\n" + read_s()),
                   kernel(write_s() + "  barrier()\n" + no_shared + read_s()));
  // Back to back.
  expect_cuda_pass("sync", kernel(write_s() + "  barrier()\n  barrier()\n" + read_s()),
                   kernel(write_s() + "  barrier()\n" + read_s()));
}

// A shared access between them keeps both.
TEST(Sync, KeepsBarriersWithSharedAccessBetween) {
  const std::string in =
      kernel(write_s() + "  barrier()\n" + read_s() + "  barrier()\n" + write_s("i_2"));
  expect_cuda_pass("sync", in, in);
}

// A synchronous copy into a shared tile: a barrier before the first later
// statement that touches the tile (its data is visible), and one before it
// when earlier code touched the tile (its readers are done); not for
// another tile. (Here one barrier between t's copy and s's second serves
// both: t's data visible, s's readers done.) Independent copies share the
// barrier that makes them visible.
TEST(Sync, BarriersAroundASynchronousCopy) {
  const std::string barrier = "  barrier()\n";
  expect_cuda_pass("sync",
                   kernel(copy_into("s", "c") + read_s() + copy_into("t", "c_1") +
                          copy_into("s", "c_2") + read_s("i_2")),
                   kernel(copy_into("s", "c") + barrier + read_s() + copy_into("t", "c_1") +
                          barrier + copy_into("s", "c_2") + barrier + read_s("i_2")));
  expect_cuda_pass("sync",
                   kernel(copy_into("s", "c") + read_s() + copy_into("s", "c_1") + read_s("i_2")),
                   kernel(copy_into("s", "c") + barrier + read_s() + barrier +
                          copy_into("s", "c_1") + barrier + read_s("i_2")));
  expect_cuda_pass("sync", kernel(copy_into("s", "c") + copy_into("t", "c_1") + read_s()),
                   kernel(copy_into("s", "c") + copy_into("t", "c_1") + barrier + read_s()));
}

// In a loop the copy runs again: a barrier before it too.
TEST(Sync, BarriersAroundACopyInALoop) {
  const std::string body = R"(  for r in serial(0, 4) {
    copy (i: 128) s[i] = x[r*128 + i] plan(register, width=2)
    for i_1 in parallel(0, 128) {
      out[r*128 + i_1] = s[i_1]
    }
  }
)";
  const std::string expected = R"(  for r in serial(0, 4) {
    barrier()
    copy (i: 128) s[i] = x[r*128 + i] plan(register, width=2)
    barrier()
    for i_1 in parallel(0, 128) {
      out[r*128 + i_1] = s[i_1]
    }
  }
)";
  expect_cuda_pass("sync", kernel(body), kernel(expected));
}

// With a wgmma tile every block barrier fences the async proxy.
TEST(Sync, BlockAsyncWhereTheKernelHasAWgmmaTile) {
  const std::string launch = "threads=128, shared_bytes=512, shared_align=128, async_barriers=1";
  expect_cuda_pass("sync", kernel(write_s() + "  barrier()\n" + read_s(), launch),
                   kernel(write_s() + "  barrier(block_async)\n" + read_s(), launch));
}

// `g` with its epilogue staged as one whole tile from shared offset 0
// (warp_staged_epilogue=0): the form that needs barriers around it.
GemmText whole_tile(GemmText g) {
  g.epilogue_plan = testing::kStagedPlan;
  g.launch.replace(g.launch.find("shared_bytes=132096"), 19, "shared_bytes=98352");
  const std::string slab_map = std::string(", ") + testing::kSlabMap;
  g.launch.replace(g.launch.find(slab_map), slab_map.size(), "");
  g.launch.replace(g.launch.find(testing::kWarpStagedNote),
                   std::string_view(testing::kWarpStagedNote).size(), testing::kStagedNote);
  return g;
}

// A per-warp staged epilogue touches no shared memory the IR shows or that
// the loop's tiles hold: the warp-specialized loop before it ends without
// a barrier (barrier_after=0), so each MMA warp starts its epilogue as
// soon as its own MMAs are done.
TEST(Sync, NoBarrierAfterTheLoopBeforeAPerWarpEpilogue) {
  EXPECT_NE(testing::wgmma_gemm("sync").text().find("barrier_after=0"), std::string::npos);
  expect_cuda_pass("sync", testing::wgmma_gemm("epilogue").text(),
                   testing::wgmma_gemm("sync").text());
  // A whole-tile one after it reuses the rings' shared memory: the loop
  // keeps its barrier (which orders it; no other is placed).
  GemmText in = whole_tile(testing::wgmma_gemm("epilogue"));
  expect_cuda_pass("sync", in.text(), single_issuer(in).text());
  // So does a statement that reads shared memory after a per-warp epilogue.
  GemmText later = testing::wgmma_gemm("epilogue");
  later.after = "evaluate(A_s[0, 0])\n";
  expect_cuda_pass("sync", later.text(), single_issuer(later).text());
}

// In a persistent kernel the MMA warps also run the next tile's statements
// before the loop: with a per-warp epilogue and nothing else of theirs
// touching shared memory, its loop needs no barrier after it either (the
// warps of one tile drift apart up to the ring's mbarriers). A whole tile
// staged in the kernel's own region keeps it: the last tile's copy-out
// reads that region.
TEST(Sync, NoBarrierAfterThePersistentLoopBeforeAPerWarpEpilogue) {
  auto persistent = [](GemmText g) {
    g.launch.insert(g.launch.find(", tensor_maps"), ", persistent=1");
    return g;
  };
  expect_cuda_pass("sync", persistent(testing::wgmma_gemm("epilogue")).text(),
                   persistent(testing::wgmma_gemm("sync")).text());
  GemmText whole = persistent(testing::wgmma_gemm("epilogue"));
  whole.epilogue_plan =
      "staged, pitch=136, stmatrix=1, contiguous_chunks=1, pair_cast=1, offset=98432";
  whole.launch.replace(whole.launch.find("shared_bytes=132096"), 19, "shared_bytes=133248");
  const std::string slab_map = std::string(", ") + testing::kSlabMap;
  whole.launch.replace(whole.launch.find(slab_map), slab_map.size(), "");
  whole.launch.replace(whole.launch.find(testing::kWarpStagedNote),
                       std::string_view(testing::kWarpStagedNote).size(), testing::kStagedNote);
  expect_cuda_pass("sync", whole.text(), single_issuer(whole).text());
}

// A ring with a copy the producer's threads issue together (cp.async: a
// gathered or unaligned tile) keeps the whole producer warpgroup, and the
// MMA warpgroups' fence.proxy.async (cp.async writes through the generic
// proxy).
TEST(Sync, NoSingleIssuerForACpAsyncCopyInTheRing) {
  GemmText in = whole_tile(testing::wgmma_gemm("epilogue"));
  in.a_copy = "cp_async, width=16";
  expect_cuda_pass("sync", in.text(), in.text());
}

// The seed's shape: a row index tile copied before the warp-specialized
// loop. The barrier after the copy (placed) and the template's are both
// gone: the loop opens with a block barrier of its own, after its mbarrier
// initialization.
TEST(Sync, RemovesTheBarrierBeforeAWarpSpecializedLoop) {
  GemmText in = whole_tile(testing::wgmma_gemm("epilogue"));
  in.params = testing::kIndexParam;
  in.prologue = testing::index_rows("row_major, stages=1, offset=98304, bytes=1024");
  in.loop_plan.replace(in.loop_plan.find("mbarriers=98304"), 15, "mbarriers=99328");
  in.launch.replace(in.launch.find("shared_bytes=98352"), 18, "shared_bytes=99376");
  GemmText out = single_issuer(in);
  in.prologue += "  barrier()\n";
  expect_cuda_pass("sync", in.text(), out.text());
}

// Unless producer_start moved the loop's mbarrier set-up (and its barrier)
// to the kernel's entry: then the staged rows need a barrier of their own
// (block_async: the kernel has a wgmma tile).
TEST(Sync, KeepsTheBarrierBeforeAWarpSpecializedLoopSetUpAtEntry) {
  GemmText in = whole_tile(testing::wgmma_gemm("epilogue"));
  in.params = testing::kIndexParam;
  in.prologue = testing::index_rows("row_major, stages=1, offset=98304, bytes=1024");
  in.loop_plan.replace(in.loop_plan.find("mbarriers=98304"), 15,
                       "setup_at_entry=1, mbarriers=99328");
  in.launch.replace(in.launch.find("shared_bytes=98352"), 18, "shared_bytes=99376");
  GemmText out = single_issuer(in);
  in.prologue += "  barrier()\n";
  out.prologue += "  barrier(block_async)\n";
  expect_cuda_pass("sync", in.text(), out.text());
}

// The same before a ring (mma.sync on sm_80): one block barrier stays.
TEST(Sync, KeepsOneBarrierBeforeARing) {
  GemmText in = testing::mma_sync_gemm();
  in.params = testing::kIndexParam;
  in.launch = "threads=256, shared_bytes=50176, shared_align=128";
  in.a_plan = "swizzled, stages=3, offset=0, bytes=24576";
  in.b_plan = "swizzled, stages=3, offset=24576, bytes=24576";
  in.loop_plan = "ring, stages=3, issue_ahead=2";
  in.epilogue_plan = "paired, why=\"the staged_epilogue option is off\"";
  in.prologue =
      testing::index_rows("row_major, stages=1, offset=49152, bytes=1024") + "  barrier()\n";
  GemmText out = in;
  in.prologue += "  barrier()\n";
  expect_cuda_pass("sync", in.text(), out.text(), {}, "sm_80");
}

// A staged epilogue reuses the shared memory from offset 0: a barrier
// before it, unless the main loop's own ends right there; after a
// warp-specialized loop only the consumer warpgroups run, so it is theirs.
TEST(Sync, BeforeAStagedEpilogue) {
  const std::string second = R"(for i_3 in parallel(0, 128) plan(staged, pitch=136, stmatrix=1) {
  for j_3 in parallel(0, 128) {
    out2[pid_m*128 + i_3, pid_n*128 + j_3] = f16(C_f[i_3, j_3])
  }
}
)";
  GemmText in = whole_tile(testing::wgmma_gemm("epilogue"));
  in.params = "  out2: global f16[2048, 2048] strides [2048, 1] align 16,\n";
  in.after = second;
  GemmText out = single_issuer(in);
  out.after = "barrier(consumers)\n" + second;
  expect_cuda_pass("sync", in.text(), out.text());

  // Not warp-specialized (wgmma asynchronous to cp.async copies).
  in.launch = "threads=256, shared_bytes=98304, shared_align=1024, async_barriers=1";
  in.a_copy = in.b_copy = "cp_async, width=16";
  in.loop_plan = "wgmma_async, stages=3, issue_ahead=2";
  out = in;
  out.after = "barrier(block_async)\n" + second;
  expect_cuda_pass("sync", in.text(), out.text());
}

// A K loop inside a tile loop (a persistent kernel's shape): a ring's first
// copies are issued before any barrier of its own, into stages the
// previous tile's staged epilogue (at shared offset 0) may still be
// reading: a barrier before it. (At the kernel's top level, nothing before
// touched its tiles: none; BeforeAStagedEpilogue.)
TEST(Sync, BeforeAPipelinedLoopThatRunsAgain) {
  GemmText in = whole_tile(testing::wgmma_gemm("epilogue"));
  in.launch = "threads=256, shared_bytes=98304, shared_align=1024, async_barriers=1";
  in.a_copy = in.b_copy = "cp_async, width=16";
  in.loop_plan = "wgmma_async, stages=3, issue_ahead=2";
  in.tile_loop = true;
  std::string out = in.text();
  out.replace(out.find("    fill(C_f, 0.0)\n"), 19,
              "    fill(C_f, 0.0)\n    barrier(block_async)\n");
  expect_cuda_pass("sync", in.text(), out);
}

// Split-K's fix-up (`tilefuse emit` of a 64x128x512 f16 GEMM at
// 64x128x64/3/4/splitk2, after epilogue): the staged epilogue inside
// if_last_arrival gets no barrier of its own. The main loop ended with
// one, and tf::last_arrival's election meets the consumers again before the
// body; the sum nest before it touches no shared memory. (A __syncthreads
// there would also wait for the producer warpgroup, which has exited.)
TEST(Sync, NoBarrierForAStagedEpilogueAfterSplitKsElection) {
  const std::string in = R"TIR(kernel gemm0(
  x: global readonly f16[64, 512] strides [512, 1] align 16,
  w: global readonly f16[512, 128] strides [128, 1] align 16,
  t2: global f16[64, 128] strides [128, 1] align 16,
  splitk_workspace: global f32[2, 1, 64, 128] align 16,
  splitk_counters: global i32[1] align 16,
) grid(pid_k: 2, pid: 1) attrs(BLOCK_K = 64, BLOCK_M = 64, BLOCK_N = 128, GROUP_M = 8, SPLIT_K = 2, num_stages = 3, num_warps = 4) plan(threads=256, consumer_threads=128, shared_bytes=73776, shared_align=1024, async_barriers=1, workspace_fragment_order=3, tensor_maps=[(param=0, elem=2, dims=[512, 64], strides=[1024], box=[64, 64], swizzle=128), (param=1, elem=2, dims=[128, 512], strides=[256], box=[64, 64], swizzle=128)], notes=["warp-specialized: warpgroup 1 issues the copies (mbarrier pipeline), warpgroups 0..0 run wgmma", "no register budgets (setmaxnreg): a 256-thread block (budgets are set for two MMA warpgroups)", "epilogue into splitk_workspace: split-K partials in the accumulators' fragment order (element e of thread t at e * threads + t of its slice: coalesced, not staged)", "epilogue into t2: staged through shared memory by stmatrix, f32 pairs cast together, stored in 16-byte row chunks (proved contiguous and aligned)"]) {
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
    for i_4 in parallel(0, 64) plan(staged, pitch=136, stmatrix=1, contiguous_chunks=1, pair_cast=1) {
      for j_4 in parallel(0, 128) {
        let n = pid*128 + j_4
        t2[i_4, n] = f16(C_f[i_4, j_4])
      }
    }
  }
}
)TIR";
  ASSERT_NE(in.find("if_last_arrival"), std::string::npos);
  ASSERT_NE(in.find("plan(staged"), std::string::npos);
  std::string out = in;
  out.replace(out.find(", mbarriers=73728"), 0, ", single_issuer=1, consumer_fence=0");
  expect_cuda_pass("sync", in, out);
}

}  // namespace
}  // namespace tilefuse::codegen
