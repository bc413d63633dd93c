// Shared by the CUDA backend's pass tests: one pass of the table
// (codegen/cuda/passes/passes.h) on a whole kernel in the text form, its
// output compared line by line with the expected text (pass_test_util.h).
//
// GemmText writes the kernel most tests start from: C = A @ B over one
// block tile (pid_m, pid_n), one pipelined K loop copying both operand
// tiles, then the epilogue nest storing C (as `tilefuse emit --stage=tir-opt
// --dump-after=PASS` prints a plain GEMM, trimmed: no GROUP_M swizzle of the
// program ids, no let of k*BLOCK_K). Each plan clause is a field, so a test
// states what the passes before wrote and what the pass under test adds.
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <string_view>

#include "../passes/pass_test_util.h"
#include "codegen/cuda/passes/passes.h"
#include "tir/target.h"

namespace tilefuse::codegen::testing {

// The options with "NAME=0|1" assignments applied.
inline tir::CudaOptions options(std::initializer_list<const char*> assignments) {
  tir::CudaOptions o;
  for (const char* a : assignments) {
    std::string error;
    EXPECT_TRUE(o.set(a, &error)) << error;
  }
  return o;
}

// The pass `name` of cuda_passes() for `target` with `opts`.
inline passes::testing::KernelPass cuda_pass(std::string_view name, tir::CudaOptions opts = {},
                                             const char* target = "sm_90a") {
  passes::PassContext context{*tir::Target::parse(target), opts};
  for (const passes::PassEntry& e : cuda_passes())
    if (e.name == name)
      return [run = e.run, context](const tir::Kernel& k) { return run(k, context); };
  ADD_FAILURE() << "no CUDA pass named " << name;
  return [](const tir::Kernel& k) { return k; };
}

// Runs the pass on `input` and expects `expected` (both whole kernels).
inline void expect_cuda_pass(std::string_view pass, const std::string& input,
                             const std::string& expected, tir::CudaOptions opts = {},
                             const char* target = "sm_90a") {
  passes::testing::expect_pass(cuda_pass(pass, opts, target), input, expected);
}

// " plan(clause)", or "" for an empty clause.
inline std::string plan(const std::string& clause) {
  return clause.empty() ? "" : " plan(" + clause + ")";
}

// Every line of `text` indented by two more spaces.
inline std::string indent(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out += "  " + l + "\n";
  return out;
}

struct GemmText {
  std::string dtype = "f16";  // the operands' (x, y, A_s, B_s)
  std::string out = "f16";    // the output's; the accumulator is f32
  int bm = 128, bn = 128, bk = 64, stages = 3, warps = 8;
  // Plan clauses, without `plan(...)`; empty: none.
  std::string launch, a_plan, b_plan, c_plan, loop_plan, a_copy, b_copy, epilogue_plan;
  // Parameters after x and y and before out (each "  name: ...,\n").
  std::string params;
  // Allocations before A_s (each "  alloc ...\n").
  std::string allocs;
  // Statements before the main loop, after the allocations.
  std::string prologue;
  // Statements of the main loop between the two copies (each "  ...\n":
  // indented by the loop's level, not the kernel body's).
  std::string between;
  // The A copy's value (default: the affine tile of x).
  std::string a_value;
  // The epilogue's statement (default: out[..] = C_f[i_2, j_2], cast to `out`).
  std::string store;
  // Statements after the epilogue nest, at its level (each "...\n", not
  // indented: they are indented with the nest).
  std::string after;
  // Fill, main loop and epilogue inside `for t in serial(0, 2)` (a tile
  // loop, as a persistent kernel would have).
  bool tile_loop = false;
  // Kernel attrs before num_warps (each "NAME = V, ", upper case: the
  // printer's order), e.g. "PERSISTENT = 1, ".
  std::string attrs;

  std::string text() const {
    const std::string m = std::to_string(bm), n = std::to_string(bn), k = std::to_string(bk);
    std::ostringstream os;
    os << "kernel gemm(\n"
       << "  x: global readonly " << dtype << "[2048, 2048] strides [2048, 1] align 16,\n"
       << "  y: global readonly " << dtype << "[2048, 2048] strides [2048, 1] align 16,\n"
       << params << "  out: global " << out << "[2048, 2048] strides [2048, 1] align 16,\n"
       << ") grid(pid_m: " << 2048 / bm << ", pid_n: " << 2048 / bn
       << ") attrs(" << attrs << "num_warps = " << warps << ")" << plan(launch) << " {\n"
       << allocs << "  alloc A_s: shared " << dtype << "[" << m << ", " << k << "]" << plan(a_plan)
       << "\n"
       << "  alloc B_s: shared " << dtype << "[" << k << ", " << n << "]" << plan(b_plan) << "\n"
       << "  alloc C_f: fragment f32[" << m << ", " << n << "]" << plan(c_plan) << "\n"
       << prologue;
    std::ostringstream tile;
    tile << "fill(C_f, 0.0)\n"
         << "for k in pipelined(0, " << 2048 / bk << ", stages=" << stages << ")" << plan(loop_plan)
         << " {\n"
         << "  copy (i: " << m << ", j: " << k << ") A_s[i, j] = "
         << (a_value.empty() ? "x[pid_m*" + m + " + i, k*" + k + " + j]" : a_value) << plan(a_copy)
         << "\n"
         << between << "  copy (i_1: " << k << ", j_1: " << n << ") B_s[i_1, j_1] = y[k*" << k
         << " + i_1, pid_n*" << n << " + j_1]" << plan(b_copy) << "\n"
         << "  gemm(A_s, B_s, C_f)\n"
         << "}\n"
         << "for i_2 in parallel(0, " << m << ")" << plan(epilogue_plan) << " {\n"
         << "  for j_2 in parallel(0, " << n << ") {\n"
         << "    "
         << (store.empty() ? "out[pid_m*" + m + " + i_2, pid_n*" + n + " + j_2] = " +
                                 (out == "f32" ? "C_f[i_2, j_2]" : out + "(C_f[i_2, j_2])")
                           : store)
         << "\n  }\n}\n"
         << after;
    os << indent(tile_loop ? "for t in serial(0, 2) {\n" + indent(tile.str()) + "}\n" : tile.str())
       << "}\n";
    return os.str();
  }
};

// `g` with `note` added to its launch plan's notes (the last).
inline GemmText with_note(GemmText g, const std::string& note) {
  if (g.launch.find("notes=[") == std::string::npos)
    g.launch += ", notes=[\"" + note + "\"]";
  else
    g.launch.insert(g.launch.rfind(']'), ", \"" + note + "\"");
  return g;
}

// The notes the passes write on the wgmma GEMM below.
inline constexpr const char* kWarpSpecializedNote =
    "warp-specialized: warpgroup 2 issues the copies (mbarrier pipeline), warpgroups 0..1 run "
    "wgmma";
inline constexpr const char* kBudgetsNote =
    "register budgets (setmaxnreg): 64 a producer thread, 216 an MMA thread";
inline constexpr const char* kStagedNote =
    "epilogue into out: staged through shared memory by stmatrix, f32 pairs cast together, stored "
    "in 16-byte row chunks (proved contiguous and aligned)";
// The epilogue pass's plan of the GEMM's nest: an f16 tile of 128 + 8
// columns, by stmatrix (a wgmma tile of 64 accumulators a thread), out's
// row chunks proved (row stride 2048, 16-byte aligned), f16(C_f[..]) a
// cast of f32.
inline constexpr const char* kStagedPlan =
    "staged, pitch=136, stmatrix=1, contiguous_chunks=1, pair_cast=1";
// The same staged per warp (the default, CudaOptions::warp_staged_epilogue)
// and each slab stored by a TMA box (CudaOptions::warp_tma_store): 8 MMA
// warps' two 2048-byte buffers at 99328, after the mbarriers (98352 rounded
// up to 1024 bytes, the swizzle), so the kernel's shared bytes grow to
// 132096, and out gets tensor map 2 (kSlabMap), one slab a box.
inline constexpr const char* kWarpStagedNote =
    "epilogue into out: staged through shared memory per warp by stmatrix (each MMA warp its own "
    "16-row slabs, 64 columns at a time in two 2048-byte buffers of its own; no block barrier), "
    "f32 pairs cast together, stored by TMA (a 128-byte swizzled box a slab, from the warp's lane "
    "0)";
inline constexpr const char* kWarpStagedPlan =
    "staged, stmatrix=1, contiguous_chunks=1, pair_cast=1, offset=99328, tma_store=2, per_warp=1, "
    "slab_buffers=2";
inline constexpr const char* kSlabMap =
    "(param=2, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 16], swizzle=128)";
// Per warp with the 16-byte copy-out (warp_tma_store=0, or an output TMA
// cannot store): one buffer a warp at 98432 (128-byte aligned), the
// kernel's shared bytes 114816.
inline constexpr const char* kWarpCopyOutNote =
    "epilogue into out: staged through shared memory per warp by stmatrix (each MMA warp its own "
    "16-row slabs, 64 columns at a time in a 2048-byte buffer of its own; no block barrier), f32 "
    "pairs cast together, stored in 16-byte row chunks (proved contiguous and aligned)";
inline constexpr const char* kWarpCopyOutPlan =
    "staged, stmatrix=1, contiguous_chunks=1, pair_cast=1, offset=98432, per_warp=1, "
    "slab_buffers=1";
// The TMA copies of its operand tiles, and their tensor maps.
inline constexpr const char* kTmaA =
    "tma, width=16, map=0, boxes=[({k*64}, {pid_m*128}, smem=0)], bytes=16384, reason=\"affine "
    "128x64 tile of x, 16-byte aligned base and strides: TMA\"";
inline constexpr const char* kTmaB =
    "tma, width=16, map=1, boxes=[({pid_n*128}, {k*64}, smem=0), ({pid_n*128 + 64}, {k*64}, "
    "smem=4096)], bytes=16384, reason=\"affine 64x128 tile of y, 16-byte aligned base and "
    "strides: TMA\"";
inline constexpr const char* kTensorMaps =
    "tensor_maps=[(param=0, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 128], "
    "swizzle=128), (param=1, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 64], "
    "swizzle=128)]";

// The 128x128x64 f16 GEMM (8 warps, 3 stages; bench/programs/gemm_f16.tfs)
// on sm_90a with the plan parts the passes of the table up to and
// including `after` write ("" for none), as `--dump-after=AFTER` shows them.
inline GemmText wgmma_gemm(std::string_view after) {
  static const char* const kOrder[] = {"",
                                       "lower_gemm",
                                       "warp_specialize",
                                       "lower_copies",
                                       "pipeline",
                                       "hoist_copy_addresses",
                                       "register_budgets",
                                       "layout",
                                       "epilogue",
                                       "sync"};
  int stage = 0;
  while (stage < 10 && kOrder[stage] != after) ++stage;
  EXPECT_LT(stage, 10) << "no pass " << after;
  GemmText g;
  if (stage < 1) return g;
  g.a_plan = "swizzled, stages=1";
  g.b_plan = "mn_swizzled, stages=1";
  g.c_plan = "wgmma, operand=f16, block=[128, 128, 64], warps=[2, 1]";
  std::string threads = "threads=256", shared = "shared_bytes=0, shared_align=128", maps, notes;
  if (stage >= 2) {
    threads = "threads=384, consumer_threads=256";
    g.loop_plan =
        "warp_specialized, stages=3, issue_ahead=3, wgmma_in_flight=1, producer_threads=128, "
        "consumer_threads=256";
    notes = std::string("\"") + kWarpSpecializedNote + "\"";
  }
  if (stage >= 3) {
    g.a_copy = kTmaA, g.b_copy = kTmaB;
    maps = std::string(", ") + kTensorMaps;
  }
  if (stage >= 6) {  // the producer only issues TMA
    g.loop_plan += ", registers=[64, 216]";
    notes += std::string(", \"") + kBudgetsNote + "\"";
  }
  if (stage >= 7) {
    g.a_plan = "swizzled, stages=3, offset=0, bytes=49152";
    g.b_plan = "mn_swizzled, stages=3, offset=49152, bytes=49152";
    g.loop_plan += ", mbarriers=98304";
    shared = "shared_bytes=98352, shared_align=1024";
  }
  if (stage >= 8) {
    g.epilogue_plan = kWarpStagedPlan;
    shared = "shared_bytes=132096, shared_align=1024";
    maps.insert(maps.size() - 1, std::string(", ") + kSlabMap);
    notes += std::string(", \"") + kWarpStagedNote + "\"";
  }
  // Nothing after the loop touches shared memory: no barrier after it; the
  // ring is all TMA copies: one producer thread, and no consumer fence.
  if (stage >= 9)
    g.loop_plan.insert(g.loop_plan.find(", mbarriers="),
                       ", barrier_after=0, single_issuer=1, consumer_fence=0");
  g.launch = threads + ", " + shared + ", async_barriers=1" + maps +
             (notes.empty() ? "" : ", notes=[" + notes + "]");
  return g;
}

// A row index tile as the seed's prologue fills it: the `index` parameter,
// and the statements that copy 128 rows of it into shared memory (the
// allocation's plan `alloc_plan`; the copy by cp.async).
inline constexpr const char* kIndexParam =
    "  index: global readonly i64[2048] strides [1] align 16,\n";
inline std::string index_rows(const std::string& alloc_plan) {
  return "  alloc index_rows: shared i64[128]" + plan(alloc_plan) +
         "\n  copy (r: 128) index_rows[r] = index[pid_m*128 + r] plan(cp_async, width=16)\n";
}

// wgmma_gemm("pipeline") with A's rows gathered through a shared row index
// tile (the seed's x[index] @ y): A by cp.async through L1, B by TMA with
// the kernel's one tensor map (reasons trimmed).
inline GemmText gathered_gemm() {
  GemmText g = wgmma_gemm("pipeline");
  g.params = kIndexParam;
  g.allocs = "  alloc index_rows: shared i64[128]\n";
  g.prologue =
      "  copy (r: 128) index_rows[r] = index[pid_m*128 + r] plan(cp_async, width=16)\n"
      "  barrier()\n";
  g.a_value = "x[index_rows[i], k*64 + j]";
  g.a_copy = "cp_async, width=16, cache_all=1";
  g.b_copy = kTmaB;
  g.b_copy.replace(g.b_copy.find("map=1"), 5, "map=0");
  g.launch.replace(g.launch.find(kTensorMaps), std::string_view(kTensorMaps).size(),
                   "tensor_maps=[(param=1, elem=2, dims=[2048, 2048], strides=[4096], box=[64, "
                   "64], swizzle=128)]");
  return g;
}

// The seed's shape after hoist_copy_addresses (index_rows staged before the
// loop, read by the hoisted A copy's addresses).
inline GemmText hoisted_gather() {
  GemmText g = gathered_gemm();
  g.a_copy = "cp_async, width=16, cache_all=1, hoist=(indices=[{index_rows[i]}, {j}], step=64)";
  return g;
}

// An mma.sync GEMM (128 x bn x 32 f16, 8 warps, `stages`) on sm_80 as
// lower_copies leaves it: both tiles by 16-byte cp.async (reasons trimmed).
inline GemmText mma_sync_gemm(int bn = 128, int stages = 3) {
  GemmText g;
  g.bn = bn, g.bk = 32, g.stages = stages;
  g.launch = "threads=256, shared_bytes=0, shared_align=128";
  g.a_plan = g.b_plan = "swizzled, stages=1";
  g.c_plan = "mma_sync, operand=f16, block=[128, " + std::to_string(bn) + ", 32], warps=[2, 4]";
  g.a_copy = g.b_copy = "cp_async, width=16";
  return g;
}

}  // namespace tilefuse::codegen::testing
