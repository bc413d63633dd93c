// The GEMM template (2-D and batched): C[b, m, n] = sum_k A[b, m, k] * B[b, k, n].
//
//   grid(pid_b: batch, pid: ceil(M/BLOCK_M) * ceil(N/BLOCK_N))   (pid_b only when batched)
//   pid -> (pid_m, pid_n) with group-M ordering: GROUP_M consecutive row
//   tiles share a column tile before moving on, so an L2-resident strip of B
//   serves GROUP_M tiles of A (Triton's matmul tutorial ordering).
//   fill(C_f, 0)
//   for k in pipelined(0, ceil(K/BLOCK_K), stages=num_stages) {
//     copy A_s[i, j] = load_input("A", [b, m, kk], mask=(m < M && kk < K))
//     copy B_s[i, j] = load_input("B", [b, kk, n], mask=(kk < K && n < N))
//     gemm(A_s, B_s, C_f)
//   }
//   for i, j in parallel: store_output("C", [b, m, n], C_f[i, j], mask=(m < M && n < N))
//
// The hooks take GEMM coordinates (b is the flat batch index); lower.cpp maps
// them to each operand's logical coordinates (broadcast batch dims, vector
// operands). One load_input per operand, inside the K loop: the template
// never hoists anything (licm does). M, N, K may be 0 or 1: the masks cover
// every tail, K = 0 leaves the loop empty (the epilogue stores zeros through
// the epilogue), M = 0 or N = 0 leaves the grid empty. A fixed size is a
// constant of the kernel; a symbolic one (graph.h) its symbol's scalar param
// (specialization.h), and the grid and the K loop's trip count are
// expressions of them. An index is i64 where its dim may have 2^31 elements
// or more (DimEnv::index_dtype_of).
#pragma once

#include <algorithm>
#include <optional>

#include "graph/graph.h"
#include "lower/signature.h"
#include "lower/specialization.h"
#include "schedule/plan.h"
#include "tir/ir.h"

namespace tilefuse {

struct GemmConfig {
  int block_m = 128, block_n = 128, block_k = 32;
  int num_stages = 3;
  int num_warps = 4;
  int group_m = 8;
  // Split-K: the K tiles are partitioned over `split_k` blocks per output
  // tile (1: no split). Each writes its f32 (f64 for f64) partial tile to a
  // workspace; the last block of a tile to arrive (LastArrivalNode) sums the
  // partials in split order 0..split_k-1 and runs the epilogue once.
  int split_k = 1;
  // Persistent (sm_90a, a warp-specialized main loop): the kernel's blocks
  // take its tiles in turn, one block an SM (codegen/cuda/passes/
  // persistent.h); the kernel attr PERSISTENT = 1 asks the persistent pass
  // for it, as CudaOptions::persistent does for every kernel.
  bool persistent = false;
  // Ping-pong (with persistent): two consumer teams of num_warps warps each
  // take alternate tiles of the block, their main loops in turn, so that
  // one team's epilogue runs during the other's main loop (the kernel attr
  // PINGPONG = 1; codegen/cuda/passes/persistent.h).
  bool pingpong = false;
  // Stream-K (0: off): the output tiles' K iterations shared out evenly over
  // `stream_k` blocks (StreamKSchedule below); with persistent kernels on
  // sm_90a each block runs its share in one sequence (LaunchPlan::
  // stream_k), elsewhere every piece is a block of its own. Needs constant
  // sizes, like split-K, and excludes it.
  int stream_k = 0;
  // Register A (sm_90a, a warp-specialized wgmma loop whose A is gathered
  // rows): the MMA warps load A into their wgmma A fragments and A never
  // enters shared memory (codegen/cuda/passes/register_a.h); the kernel
  // attr REGISTER_A = 1 asks the register_a pass for it, as
  // CudaOptions::register_a does for every kernel.
  bool register_a = false;
  // With register_a: the fragment loads' L2 prefetch size, 0 or 256 bytes
  // (CopyPlan::l2_prefetch; the kernel attr FRAGMENT_L2_PREFETCH = 256 asks
  // the register_a pass for it, as CudaOptions::fragment_l2_prefetch does
  // for every kernel). The tuner tries both: measured 2.5% faster on
  // gather_heavy and 1-2% slower on the seed and moe_up_proj (H100,
  // bench/RESULTS.md, session 32).
  int register_a_l2_prefetch = 0;
  // The split tail (sm_90a, a warp-specialized wgmma loop with a per-warp
  // staged epilogue; 0: off): the loop's last split_tail k-tiles go N half
  // by N half and the epilogue stores half 0 while half 1's tail runs
  // (codegen/cuda/passes/split_tail.h); the kernel attr SPLIT_TAIL asks the
  // split_tail pass for it (CudaOptions::split_tail does for every kernel,
  // with its default tail). The config suffix /tailT.
  int split_tail = 0;
};

// Stream-K's decomposition of a GEMM's work (Osama, Merrill, Cecka, Garland
// and Owens, "Stream-K: Work-centric Parallel Decomposition for Dense
// Matrix-Matrix Multiplication on the GPU", PPoPP 2023; its "data-parallel
// + stream-K" hybrid). The tiles are taken in the template's order (the
// grouped raster). The first dp_tiles, a multiple of `units`, are whole
// work items that the blocks take round robin (good L2 reuse, no fix-up);
// the K iterations of the remaining sk_tiles (the last wave's, part full)
// are shared out in contiguous ranges: unit u runs iterations
// [begin(u), begin(u + 1)) of the sk_tiles * k_tiles, begin(u) = u *
// per_unit + min(u, extra), in tile order. A unit's range cut at tile
// boundaries gives its pieces (at most `pieces`); a tile cut at unit
// boundaries has at most `peers` pieces. A piece that covers its whole tile
// runs the epilogue; the others store an f32 (f64) partial tile in the
// unit's first or last workspace slot, and the last to arrive at the tile's
// counter sums the tile's partials in K order and runs the epilogue once:
// bit-identical run to run, no float atomics.
struct StreamKSchedule {
  int64_t tiles = 0;     // output tiles, all batches
  int64_t k_tiles = 0;   // K tiles a tile
  int64_t dp_tiles = 0;  // whole tiles first, round robin over the units
  int64_t sk_tiles = 0;  // the tiles whose K iterations are shared out
  int64_t units = 0;     // blocks (at most the requested count)
  int64_t sk_units = 0;  // the first units, which share out the sk_tiles
  int64_t per_unit = 0;  // K iterations a unit, and one more for the first
  int64_t extra = 0;     //   `extra` units
  int64_t pieces = 0;    // the most pieces of one unit
  int64_t peers = 0;     // the most pieces of one tile
  // The work items: dp_tiles whole tiles, then `pieces` a unit (some
  // empty: a unit with fewer pieces has nothing at the rest).
  int64_t work_items() const { return dp_tiles + units * pieces; }
  // The first K iteration of unit u (of the sk_tiles * k_tiles; their
  // count for u >= sk_units, which have none).
  int64_t begin(int64_t u) const {
    return std::min(u, sk_units) * per_unit + std::min(u, extra);
  }
  // The unit that runs iteration x.
  int64_t unit_of(int64_t x) const;
};

// The schedule of `tiles` output tiles of `k_tiles` K tiles each over
// `units` blocks: the whole waves, dp_tiles = tiles / units * units (less
// one wave where that is every tile), round robin; the rest shared out
// over sk_units of them, as many as give each at least half a tile's K
// iterations (so a tile has at most 3 pieces: the last arrival's sum of
// up to 8 pieces of a 128x256 tile spilled 200 bytes, ptxas at 168
// registers a thread, bench/RESULTS.md session 22). nullopt when there is nothing to share out (no
// tiles, no K tiles or units < 1).
std::optional<StreamKSchedule> stream_k_schedule(int64_t tiles, int64_t k_tiles, int64_t units);

// True for a GEMM step whose operands share one floating dtype (the graph
// guarantees it for Matmul/Addmm).
bool can_use_gemm(const Graph& graph, const KernelStep& step);

// The heuristic config: tiles no larger than the problem (powers of two,
// BLOCK_M/N in [16, 128], BLOCK_K in [16, 32] bytes-agnostic), up to 3
// stages but no more than K tiles, 8 warps for 128x128 tiles, GROUP_M 8.
// With `wgmma` (an sm_90a target) 16-bit operands take BLOCK_K 64 (one
// 128-byte swizzle row, what the wgmma tile reads) where K allows. A
// symbolic dim counts as its size hint (specialization.h), and as a
// multiple of 16 only where the specialization says so.
GemmConfig default_gemm_config(const DimEnv& env, const KernelStep& step, bool wgmma = false);
// The same for a graph without symbols (or at the values in it).
GemmConfig default_gemm_config(const Graph& graph, const KernelStep& step, bool wgmma = false);

// The CPU executor's config. A program instance's tile is C's block of
// BLOCK_M x BLOCK_N accumulators; each K step the gemm packs the operand
// tiles for the reference's microkernel (reference/matmul.h) straight from
// their source rows (pack_gemm_operands: the template's staging copies move
// nothing on the CPU), so every A element is packed once per N-tile, every
// B element once per M-tile, and the accumulators are loaded and stored
// once per K step. Large tiles and long K steps amortize both:
// BLOCK_M, BLOCK_N up to 512 (halved, the larger first, down to 64 while
// the problem has fewer than 16 tiles, so that a machine's threads each get
// one) and BLOCK_K up to 512, no larger than the problem; one stage (the
// executor runs stages in order). Measured on the seed (bench/RESULTS.md):
// 128x128x32, the GPU heuristic's, made the executor 3x slower than the
// reference evaluator; 512x512x512 brought it to 1.16x with the staging
// copies (2026-12-01), and to ~0.95x without them (pack_gemm_operands; the
// per-tile packing is what is left over the reference's one pack; 4 or 8
// larger tiles would halve it but leave a larger machine's threads idle).
// No tile is larger than the next power of two of its dim, down to 1: a
// batched GEMM's instance is one batch item's tile, and the GPU's floor of
// 16 made each item of 2^20 4 x 4 @ 4 x 4 products a 16 x 16 x 16 tile (64
// times the multiply-adds, 16 times the epilogue's lanes): 1.7 s against the
// reference's 0.8 s, 0.55 s with 4 x 4 x 4 tiles (2 threads). The sums do
// not depend on the tile (k order), so neither do the results.
// A symbolic dim counts as its size hint, as in default_gemm_config.
GemmConfig default_cpu_gemm_config(const DimEnv& env, const KernelStep& step);
// The same for a graph without symbols (or at the values in it).
GemmConfig default_cpu_gemm_config(const Graph& graph, const KernelStep& step);

// The accumulator dtype of a GEMM over operands of `dtype`: f32, or f64 for
// f64 (graph.h's rounding contract).
DType accumulator_dtype(DType dtype);

// The first symbolic size of a GEMM step, as "<dim> = <symbol>" (dim: M,
// N, K or batch dim d), or "" when every size is a constant. Split-K needs
// constant sizes (its workspace and tile counters are sized at compile
// time), so a config with split_k > 1 is only for steps where this is "".
std::string gemm_symbolic_dim(const Graph& graph, const KernelStep& step);

// Builds the GEMM kernel of `step` (its geometry and operand dtype) with
// `sig`'s buffers as params: the buffers, under split-K (split_k > 1) or
// stream-K (stream_k > 0; every size constant: a failed check otherwise)
// its workspace and tile counters, then `sig`'s scalar params. A stream-K
// config whose GEMM has nothing to share out (stream_k_schedule) builds the
// plain kernel.
tir::Kernel build_gemm(const DimEnv& env, const KernelStep& step, const KernelSignature& sig,
                       const GemmConfig& config);

}  // namespace tilefuse
