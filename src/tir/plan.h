// The kernel plan: the lowering decisions of the backend passes, recorded on
// the Tile IR as typed data (DESIGN.md, "Passes": lower_copies, pipeline,
// layout, lower_gemm; docs/architecture.md for the CUDA pass table).
//
// A backend pass reads the kernel and the plan the passes before it wrote,
// decides, and writes its part of the plan; the code generator only prints
// what the plan says. Each part sits on the node it is about:
//
//   Copy      CopyPlan      how the tile moves (lower_copies; pipeline adds
//                           register double-buffering)
//   Allocate  SharedPlan    a shared tile's swizzle (lower_gemm), ring depth
//                           and offset (layout)
//             FragmentPlan  an accumulator's MMA family and warp grid (lower_gemm)
//   For       PipelinePlan  a pipelined loop's form, stages, issue-ahead
//                           distance, MMA wait depth, warp roles
//                           (warp_specialize, pipeline, layout)
//             EpiloguePlan  how a parallel nest over an accumulator stores
//                           it (epilogue)
//   Barrier   BarrierKind   which threads and which proxy it orders (sync)
//   Kernel    LaunchPlan    threads, shared memory, tensor maps, grid, notes
//
// The text form (tir/printer.h) prints each part as a `plan(...)` clause
// after its node, and the parser reads it back, so a pass test can start
// from any point of the backend pipeline. The verifier checks the plan's
// invariants (tir/verifier.h, "Plan").
//
// Included by tir/ir.h; include that, not this.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "tir/handle.h"

namespace tilefuse::tir {

// ---- copies ----------------------------------------------------------------

// How a copy moves its tile; the first three are the DESIGN.md order of
// preference (TMA, cp.async, register-staged), "direct" is the CPU
// executor's element-by-element copy, "gemm_pack" a CPU copy whose only
// reader is a gemm that packs its operand panels straight from the copy's
// source (passes/pack_gemm_operands.h): the tile is never staged.
#define TILEFUSE_FOR_EACH_COPY_MECHANISM(X) \
  X(Tma, "tma")                             \
  X(CpAsync, "cp_async")                    \
  X(Register, "register")                   \
  X(Direct, "direct")                       \
  X(GemmPack, "gemm_pack")                  \
  X(Fragment, "fragment")

enum class CopyMechanism : uint8_t {
#define TF_TIR_ENUM(name, ...) name,
  TILEFUSE_FOR_EACH_COPY_MECHANISM(TF_TIR_ENUM)
#undef TF_TIR_ENUM
};
std::string_view copy_mechanism_name(CopyMechanism m);  // "tma", "cp_async", ...

// One TMA box of a stage: its origin in tensor coordinates (innermost
// first, as cuTensorMapEncodeTiled numbers dims) and where it lands, in
// elements from the start of the stage's tile.
struct TmaBox {
  std::vector<Expr> coords;
  int64_t smem_offset = 0;
};

// How one copy is done (lower_copies). Widths are bytes per access:
//  - Tma: 16 (the copy engine's granule); `boxes` per stage, `tensor_map`
//    indexes LaunchPlan::tensor_maps. A row gather (`row_gather`) has one
//    box per gathered row: boxes[0] with the copy's row var free, `rows`
//    of them, each `row_pitch` elements apart; rows where `row_mask` is
//    false read row -1 (wholly out of bounds: zero-filled).
//  - CpAsync: 4, 8 or 16 (PTX ISA, "cp.async": cp-size).
//  - Register: the bytes of the main source read per access: `vector_load`
//    (a Load node of the copy's value, by identity) is read `width` bytes at
//    a time (two or more elements), else every load element by element and
//    `width` is the main load's element size.
//  - Direct, GemmPack: the destination's element size.
//  - Fragment: 16. The A operand of a warp-specialized wgmma loop with
//    PipelinePlan::register_a_ahead > 0 (register_a): the MMA warps load
//    their own wgmma A fragments from global memory, 16 bytes at a time,
//    and the tile never enters shared memory (its buffer is not read). The
//    source addresses are the hoisted ones (`hoisted_indices`, `hoisted_mask`,
//    `step`, as for a hoisted cp.async copy), with every shared-memory read
//    forwarded to the global loads it stages.
struct CopyPlan {
  CopyMechanism mechanism = CopyMechanism::Register;
  int64_t width = 0;
  Expr vector_load;
  std::string reason;  // for explain: why this mechanism, why not the others
  // Register only: pipeline's register double-buffering inside a
  // pipelined loop (values loaded into `register_slots` registers per
  // thread before the consumer, stored to the stage after it); 0: off.
  int register_slots = 0;
  // Register, in a persistent kernel's producer prologue (prefetch_prologue):
  // the loads are issued for the next tile into `register_slots` registers a
  // thread while this tile's copies run, and stored to the destination at
  // the start of the next tile.
  bool next_tile = false;
  // Tma only.
  int tensor_map = -1;
  std::vector<TmaBox> boxes;
  int64_t tma_bytes = 0;  // per stage
  bool row_gather = false;
  int64_t rows = 0, row_pitch = 0;
  Expr row_mask;  // undefined: every row
  // CpAsync: `.ca` (cached in L1) rather than `.cg` for a 16-byte copy: a
  // gather's duplicate rows are then served by L1 instead of queueing at
  // one L2 slice (lower_copies, CudaOptions::gather_cache_all).
  bool cache_all = false;
  // Tma, in a kernel of LaunchPlan::cluster_size > 1 blocks (cluster): every
  // block of the cluster reads the same tile at each stage, so block r issues
  // boxes r, r + cluster_size, ... by TMA multicast into all of them.
  bool multicast = false;
  // CpAsync in a warp-specialized producer (hoist_copy_addresses): the
  // source address of each of the thread's slots is computed once, before
  // the loop, at `hoisted_indices` (the source indices at the loop's first
  // iteration) where `hoisted_mask` holds (else zero-filled), and moves by
  // `step` elements a loop iteration; `iteration_mask` (undefined: none) is
  // the part of the mask that varies with the loop.
  bool hoisted = false;
  std::vector<Expr> hoisted_indices;
  Expr hoisted_mask, iteration_mask;
  int64_t step = 0;
  // A hoisted `cache_all` copy (hoist_copy_addresses, CudaOptions::
  // gather_cache_by_repeats): `.ca` only where the rows repeat. After the
  // hoisted addresses of a tile, each lane of a producer warp compares the
  // sources of its slots 0 and 1 (the same column chunk of two rows; the
  // pass marks only such copies, of 2+ rounds); with 16 or more lanes
  // equal the warp issues the tile's copies by `.ca` (L1 merges the
  // repeated rows' reads), else by `.cg` (distinct rows: 1-5% faster on the
  // H200, and a tile of one repeated row 3x slower by .cg; bench/RESULTS.md,
  // sessions 19-20).
  bool cache_by_repeats = false;
  // Fragment: the loads by ld.global.nc.L1::no_allocate (PTX ISA 9.7.9.8,
  // "ld": an eviction-priority qualifier): each thread reads each of its
  // rows' k-slices once, so L1 keeps nothing of them that is read again
  // (register_a, CudaOptions::fragment_no_allocate).
  bool no_allocate = false;
  // Fragment: the loads' L2 prefetch size in bytes (0: the default, or 256:
  // .L2::256B, PTX ISA 9.7.9.8 "ld", .level::prefetch_size): a miss fetches
  // the 256-byte pair of lines, so a row's next k-tile (its next 128 bytes)
  // is in L2 when its load issues, one DRAM round trip for two k-tiles
  // (register_a; GemmConfig::register_a_l2_prefetch,
  // CudaOptions::fragment_l2_prefetch; bench/RESULTS.md, session 32).
  int l2_prefetch = 0;
  // Fragment: each k-tile's 16 words by 32-bit ld.global, each straight into
  // its register of wgmma's register-A order, unpredicated (a masked row
  // reads tf::kZeroRow), instead of four predicated 16-byte ld.global.nc
  // (tf::load_a_fragment_words against tf::load_a_fragment). wgmma's order
  // interleaves rows r and r + 8, so a 16-byte load's words need copies,
  // which ptxas placed a k-tile after the load: ncu put 31% of the MMA
  // warps' main-loop stall samples on them (register_a,
  // CudaOptions::fragment_word_loads; bench/RESULTS.md, session 46).
  // Measured 22-34% slower than the 16-byte form on the seed, gather_heavy,
  // repeats and moe_up_proj (H100, bench/RESULTS.md, session 49): it stays
  // an option, off.
  bool word_loads = false;
  // Fragment (register_a): the index checks of the rows the copy reads,
  // each a CheckNode over the copy's row var (vars[0]) and the kernel's
  // lets that reads only the kernel's inputs. Each MMA thread runs them for
  // its two fragment rows where it computes the rows' addresses (the index
  // value already in a register), so the prologue's checks need no staged
  // index tile and the producer runs none (register_a absorbs them).
  std::vector<Stmt> row_checks;
};

// ---- shared tiles and accumulators ----------------------------------------

// How a shared tile is laid out (src/runtime/device/tf_copy.cuh):
// row-major; `swizzled`: 16-byte chunks XOR row (ldmatrix without bank
// conflicts; with 128- or 64-byte rows the wgmma 128- or 64-byte swizzle
// of a K-major operand); `swizzled32`: 32-byte units (the B tile of a TF32
// gemm);
// `mn_swizzled`: a wgmma MN-major operand (128-byte column strips).
#define TILEFUSE_FOR_EACH_SHARED_LAYOUT(X) \
  X(RowMajor, "row_major")                 \
  X(Swizzled, "swizzled")                  \
  X(Swizzled32, "swizzled32")              \
  X(MnSwizzled, "mn_swizzled")

enum class SharedLayout : uint8_t {
#define TF_TIR_ENUM(name, ...) name,
  TILEFUSE_FOR_EACH_SHARED_LAYOUT(TF_TIR_ENUM)
#undef TF_TIR_ENUM
};
std::string_view shared_layout_name(SharedLayout l);

// A shared buffer: its layout (lower_gemm, for MMA operands), its ring
// depth (the stages of the pipelined loop that fills it) and its offset in
// the block's dynamic shared memory, in bytes (layout; -1 before).
struct SharedPlan {
  SharedLayout layout = SharedLayout::RowMajor;
  // The ring depth; 0 (with `bytes` 0): the tile never enters shared memory,
  // as only a fragment copy fills it (CopyMechanism::Fragment; layout).
  int stages = 1;
  int64_t offset = -1;
  int64_t bytes = 0;  // all stages
};

// The instruction family of an accumulator tile (lower_gemm):
// `simt_fma` one FMA per product (exact f32/f64); `mma_sync` ldmatrix +
// mma.sync.m16n8k16 (f16/bf16, f32 accumulators); `mma_sync_tf32`
// mma.sync.m16n8k8 .tf32 (f32 operands rounded to TF32, --allow-tf32);
// `wgmma` wgmma.mma_async from shared memory (sm_90a; PTX ISA 9.7.15).
#define TILEFUSE_FOR_EACH_MMA_FAMILY(X) \
  X(SimtFma, "simt_fma")                \
  X(MmaSync, "mma_sync")                \
  X(MmaSyncTf32, "mma_sync_tf32")       \
  X(Wgmma, "wgmma")

enum class MmaFamily : uint8_t {
#define TF_TIR_ENUM(name, ...) name,
  TILEFUSE_FOR_EACH_MMA_FAMILY(TF_TIR_ENUM)
#undef TF_TIR_ENUM
};
std::string_view mma_family_name(MmaFamily f);

// An accumulator (fragment) and the gemm into it: the family, the block
// tile, and the grid of warps (mma_sync) or warpgroups (wgmma) over it;
// simt_fma spreads the tile over `threads`. `operand` is the operands'
// dtype (the accumulator's own for a fragment no gemm writes).
struct FragmentPlan {
  MmaFamily family = MmaFamily::SimtFma;
  DType operand = DType::F32;
  int block_m = 0, block_n = 0, block_k = 0;
  int warps_m = 1, warps_n = 1;
  int threads = 0;
  // wgmma (split_tail): 2 where each 64-row warpgroup's k16 step is two
  // m64n(N/2) instructions, one an N half of the warpgroup's columns, each
  // its own accumulator chain (tf_wgmma.cuh, WgmmaTile's CHAINS); 1: one
  // m64nN instruction.
  int chains = 1;
};

using BufferPlan = std::variant<std::monostate, SharedPlan, FragmentPlan>;

// ---- loops -------------------------------------------------------------------

// How a pipelined loop runs (pipeline, warp_specialize):
//  - in_order: one iteration after another with block barriers (an
//    irregular body, no copies, or one stage); `why` says which.
//  - ring: the copies of iteration i + issue_ahead are issued while
//    iteration i computes (cp.async groups, one block barrier a step).
//  - fragment_pipelined: a ring whose MMA fragments are double-buffered
//    across k16 steps and tiles (the CUTLASS multistage main loop).
//  - wgmma_async: a ring whose one gemm runs asynchronously on wgmma,
//    `wgmma_in_flight` groups left in flight across the barrier.
//  - warp_specialized: a producer warpgroup (`producer_threads`, after the
//    `consumer_threads`) issues each stage's copies and signals a `full`
//    mbarrier per stage; the consumers wait on it, run the stage's wgmma
//    and release it through an `empty` mbarrier. The 2 * stages mbarriers
//    (and, with LaunchPlan::consumer_teams 2, the teams' `order` pair
//    after them) sit at `mbarrier_offset` bytes in shared memory (layout).
//    After the
//    loop only the consumers run.
#define TILEFUSE_FOR_EACH_PIPELINE_FORM(X)      \
  X(InOrder, "in_order")                        \
  X(Ring, "ring")                               \
  X(FragmentPipelined, "fragment_pipelined")    \
  X(WgmmaAsync, "wgmma_async")                  \
  X(WarpSpecialized, "warp_specialized")

enum class PipelineForm : uint8_t {
#define TF_TIR_ENUM(name, ...) name,
  TILEFUSE_FOR_EACH_PIPELINE_FORM(TF_TIR_ENUM)
#undef TF_TIR_ENUM
};
std::string_view pipeline_form_name(PipelineForm f);

struct PipelinePlan {
  PipelineForm form = PipelineForm::InOrder;
  int stages = 1;           // ring depth of the loop's shared tiles
  int issue_ahead = 0;      // iterations whose copies are in flight
  int wgmma_in_flight = 0;  // wgmma groups left pending at the loop's wait
  int producer_threads = 0, consumer_threads = 0;  // warp_specialized
  // warp_specialized: registers per thread of each role by setmaxnreg (PTX
  // ISA 9.7.17.3) under __launch_bounds__(threads, 1); 0: not set.
  int producer_registers = 0, consumer_registers = 0;
  int64_t mbarrier_offset = -1;                    // warp_specialized (layout)
  // warp_specialized (producer_start): the mbarriers are initialized at the
  // kernel's entry rather than just before the loop, so that the producer
  // does not wait for the statements before the loop (the index checks,
  // which the MMA warpgroups then run while the first stages land).
  bool setup_at_entry = false;
  // warp_specialized, setup_at_entry (producer_start): the producer issues
  // the affine TMA copies of the first `affine_lead` iterations (<= stages)
  // first thing, before its hoisted gathered-row addresses, whose index
  // load then overlaps those bytes; 0: every copy in its iteration.
  int affine_lead = 0;
  // warp_specialized (sync): the MMA warpgroups meet at a barrier after the
  // loop, before what follows reads or writes shared memory; false where
  // nothing after it in the kernel does (a per-warp staged epilogue uses
  // buffers of its own), so each warp goes on to its epilogue as soon as
  // its own MMAs are done.
  bool barrier_after = true;
  // warp_specialized (sync): every copy of the ring is an affine TMA copy,
  // which producer thread 0 issues, and the producer runs nothing else (no
  // index prologue): the other producer threads leave right after their
  // register budget, so that 127 threads do not poll the `empty` mbarriers
  // for nothing (CUTLASS's producer warp elects one thread likewise).
  bool single_issuer = false;
  // warp_specialized (sync): the MMA warpgroups run fence.proxy.async after
  // each stage's `full` wait, as a copy into the ring writes through the
  // generic proxy (cp.async, st.shared) and wgmma reads through the async
  // proxy (PTX ISA 9.7.12.15 "membar/fence", proxy.async). false where every
  // copy into the ring is a TMA copy (the async proxy's own writes, visible
  // to its reads once the stage's mbarrier has seen their transaction bytes:
  // PTX ISA 9.7.9.25.5.2 cp.async.bulk.tensor, .mbarrier::complete_tx) or
  // the MMA warps' fragment loads (register_a: no shared tile). The fence
  // made gemm_bf16_8192 1.2-2.3% slower on the H200 (session 27).
  bool consumer_fence = true;
  // warp_specialized (register_a): the gemm's A operand is loaded by the MMA
  // warps into registers (its copy's mechanism `fragment`) and read by
  // wgmma's register-A form; this many k-tiles of those loads are in flight
  // (1-3, in a ring of kRegisterASlots fragments of 16 registers a thread),
  // and the loop's trip count is a multiple of kRegisterASlots. B's TMA
  // copy reads K permuted inside each 64-row k-tile, as the fragments do
  // (tf_wgmma.cuh, WgmmaTile::mma_async_rs); 0: off.
  int register_a_ahead = 0;
  // warp_specialized (split_tail): the MMA warpgroups issue the loop's last
  // `split_tail` k-tiles as two runs of wgmma groups, N half 0 of each, then
  // N half 1 of each (the fragment's two chains), and the per-warp staged
  // epilogue after the loop waits only for half 0 before it stores half 0's
  // slabs, then for the rest before half 1's: half the epilogue runs while
  // the tensor pipe still has split_tail half-k-tiles to do. The tail's
  // stages go back to the producer once their half-1 groups are done (the
  // stage before the tail after half 0's wait); with register_a, the tail's
  // fragment loads after its first wait for the final wgmma wait, so
  // split_tail <= register_a_ahead; split_tail < stages (the tail's last
  // k-tile reuses the stage that goes back after half 0). 0: off.
  int split_tail = 0;
  std::string why;                                 // in_order: why
};

// The register-A ring's fragments (PipelinePlan::register_a_ahead).
inline constexpr int kRegisterASlots = 4;

// How a parallel nest over an accumulator stores it (epilogue):
//  - per_element: each accumulator element the thread owns, one by one;
//  - paired: the thread's column pairs (e, e + 1) computed together and
//    stored with one access of twice the width where adjacent and aligned;
//  - staged: the pairs go to a padded [BLOCK_M][pitch] tile in shared
//    memory at offset 0, then whole 16-byte row chunks go to global memory.
#define TILEFUSE_FOR_EACH_EPILOGUE_FORM(X) \
  X(PerElement, "per_element")             \
  X(Paired, "paired")                      \
  X(Staged, "staged")                      \
  X(FragmentOrder, "fragment_order")

enum class EpilogueForm : uint8_t {
#define TF_TIR_ENUM(name, ...) name,
  TILEFUSE_FOR_EACH_EPILOGUE_FORM(TF_TIR_ENUM)
#undef TF_TIR_ENUM
};
std::string_view epilogue_form_name(EpilogueForm f);

struct EpiloguePlan {
  EpilogueForm form = EpilogueForm::PerElement;
  int64_t pitch = 0;   // staged: elements per row of the shared tile
  // staged: the tile's byte offset in shared memory (0: over the operand
  // rings, dead by then; a persistent kernel's producer fills them for the
  // next tile meanwhile, so there it has a region of its own).
  int64_t offset = 0;
  // staged, with LaunchPlan::consumer_teams 2: team t's tile is t *
  // team_stride bytes after `offset` (0: one team).
  int64_t team_stride = 0;
  // staged, a wgmma accumulator into 16-bit outputs: the values go to the
  // tile by stmatrix.x4, four pairs an instruction (the wgmma D fragment is
  // stmatrix's), else a 2-element store a pair.
  bool stmatrix = false;
  // staged, proved by axis_info over the nest (row var over the tile's rows,
  // column var over its columns): along the column var the store's element
  // offset is contiguous on aligned runs of 16 / element-size columns whose
  // first address is 16-byte aligned (the buffer's alignment included), so
  // the copy-out stores each 16-byte row chunk with one access at one
  // address, no run-time pointer or alignment test; else (false) it tests
  // both per chunk and falls back to element stores.
  bool contiguous_chunks = false;
  // staged with contiguous_chunks: the store's mask is not constant on the
  // chunks (axis_info's mask constancy along the column var), so the
  // copy-out computes a mask per element and stores a chunk whole only when
  // all are true; false: one mask a chunk (or none).
  bool chunk_mask_varies = false;
  // staged, the stored value a cast of an f32 value to f16 or bf16: each
  // pair of accumulator elements is converted together (tf::cast_pack2,
  // tf_numeric.cuh: one cvt.rn.{f16x2,bf16x2}.f32, NaNs re-encoded on the
  // pair), bit-identical to two tf::cast.
  bool pair_cast = false;
  // staged, stmatrix, in a persistent kernel: the tile goes out by TMA
  // stores of LaunchPlan::tensor_maps[tma_store] (-1: by the copy-out's
  // 16-byte stores). The shared tile is then laid out as the map's 128-byte
  // swizzled boxes, mn_swizzled (tf_copy.cuh: 64-column strips of `rows`
  // rows), 1024-byte aligned; one thread issues a box a strip at the
  // store's (row, column) origin and, before the next tile's stmatrix,
  // waits until they have read the tile (PTX ISA 9.7.9.25.5.2,
  // cp.async.bulk.tensor; 9.7.9.25.5.5 cp.async.bulk.wait_group.read).
  int tma_store = -1;
  // staged, stmatrix, not TMA-stored: each MMA warp stages and stores only
  // the rows it holds (a wgmma D fragment gives warp w of a warpgroup rows
  // 16w .. 16w + 15 of each m64 tile, every column of the warpgroup's N),
  // one slab of 16 rows x 64 columns at a time, through a buffer of its own
  // of kWarpSlabBytes at `offset` + (thread id / 32) * kWarpSlabBytes
  // (16 rows of 128 bytes, 16-byte chunk c of row r at c ^ (r % 8): the
  // stmatrix rows and the copy-out's row reads are free of bank conflicts).
  // Its stores start as soon as its slab is staged and only __syncwarp
  // orders them: no block barrier before or after the staging, and the
  // region lies after every other shared byte (the operand rings may still
  // be read by the other warpgroup's wgmma). `pitch` is 0.
  // With tma_store >= 0 (the map's box one slab, 16 rows x 64 columns,
  // 128-byte swizzled: the buffer's layout) the warp's lane 0 stores each
  // slab by one TMA box from its buffer, after the warp's stmatrix and
  // fence.proxy.async, and slab s takes buffer s % slab_buffers of the
  // warp's, waiting before its stmatrix until the slab stored from that
  // buffer has been read (cp.async.bulk.wait_group.read); `offset` is then
  // 1024-byte aligned (the swizzle).
  bool per_warp = false;
  // per_warp: buffers of kWarpSlabBytes a MMA warp (1, or 2 for TMA stores:
  // the next slab is staged while the last one's box is read; with TMA
  // stores up to kMaxWarpSlabBuffers, one a slab: CudaOptions::
  // slab_buffers_all), warp w's at offset + w * slab_buffers * kWarpSlabBytes.
  int slab_buffers = 0;
  std::string why;     // why not staged (paired), for explain
};

// A per-warp staged epilogue's buffer: 16 rows x 64 16-bit columns.
inline constexpr int64_t kWarpSlabBytes = 2048;
// The most buffers a warp's TMA-stored slabs take (CudaOptions::
// slab_buffers_all: one a slab; 4 at BLOCK_N 256).
inline constexpr int kMaxWarpSlabBuffers = 8;
// "a 2048-byte buffer", "two 2048-byte buffers", "4 2048-byte buffers": a
// per-warp epilogue's `n` buffers, for notes and the printer's comments.
std::string warp_slab_buffers_words(int n);

using LoopPlan = std::variant<std::monostate, PipelinePlan, EpiloguePlan>;

// ---- barriers ----------------------------------------------------------------

// What a barrier orders (sync): every thread of the block (`block`); the
// same, with each thread's generic-proxy shared-memory writes fenced for
// the async proxy first (`block_async`: wgmma or TMA reads them next; PTX
// ISA 9.7.12.15 fence.proxy.async); the consumer warpgroups of a
// warp-specialized loop only, after it (`consumers`: a named barrier over
// LaunchPlan::consumer_threads, async-fenced).
#define TILEFUSE_FOR_EACH_BARRIER_KIND(X) \
  X(Block, "block")                       \
  X(BlockAsync, "block_async")            \
  X(Consumers, "consumers")

enum class BarrierKind : uint8_t {
#define TF_TIR_ENUM(name, ...) name,
  TILEFUSE_FOR_EACH_BARRIER_KIND(TF_TIR_ENUM)
#undef TF_TIR_ENUM
};
std::string_view barrier_kind_name(BarrierKind k);

// ---- the kernel ----------------------------------------------------------------

// A TMA tensor map the kernel takes (after tf_status, in this order): the
// runtime encodes it with cuTensorMapEncodeTiled (CUDA Driver API, "Tensor
// Map Object Management") for the buffer of the kernel's `param`-th
// parameter.
struct TensorMapPlan {
  int param = 0;                 // index into the kernel's params (a global buffer)
  int elem_bytes = 0;            // element size (the map copies bytes)
  std::vector<int64_t> dims;     // elements per dim, innermost first
  std::vector<int64_t> strides;  // bytes, of dims 1 .. rank - 1
  std::vector<int> box;          // box extent per dim, innermost first
  int swizzle_bytes = 0;         // 0 (none), 64 or 128 (CU_TENSOR_MAP_SWIZZLE_64B / _128B)
};

// The launch and the kernel-wide facts (lower_gemm, warp_specialize,
// lower_copies, layout). `defined` is false until lower_gemm runs (and on
// the CPU).
struct LaunchPlan {
  bool defined = false;
  int num_threads = 0;       // per block
  int consumer_threads = 0;  // the MMA warpgroups of a warp-specialized loop; 0: none
  int64_t dynamic_shared_bytes = 0;
  int shared_align = 128;        // bytes, of the dynamic shared memory's base
  bool async_barriers = false;   // a wgmma tile: block barriers fence the async proxy
  // A persistent kernel (persistent): the grid's program ids are `tiles`
  // tiles that each block takes in turn (tile = block, block + blocks, ...);
  // the runtime launches min(tiles, SMs) blocks.
  bool persistent = false;
  // A persistent kernel's consumer teams (persistent, the PINGPONG attr): 1,
  // or 2 teams of consumer_threads MMA threads each (threads team *
  // consumer_threads ..), taking the block's tiles in turn (team 0 its
  // 1st, 3rd, ...), their main loops one after the other (the `order`
  // mbarrier pair after the ring's), each with its own staged-epilogue
  // region and named barrier; num_threads counts both teams.
  int consumer_teams = 1;
  // A persistent stream-K kernel (persistent, the STREAM_K attrs of
  // gemm_template.h's StreamKSchedule): 0, or the blocks the runtime
  // launches (exactly this many; no block waits on another, so any number
  // is correct, and the SMs' count is the tuned one). The grid's program
  // ids are stream_k_dp_tiles whole tiles, then stream_k_pieces a block:
  // block b takes ids b, b + units, ... below stream_k_dp_tiles (a multiple
  // of units), then stream_k_dp_tiles + b * pieces .. + pieces - 1 in turn.
  int64_t stream_k_units = 0;
  int64_t stream_k_dp_tiles = 0;
  int64_t stream_k_pieces = 0;
  // A persistent kernel's ring count fold (persistent), in ring
  // iterations: 0, never; else after each tile a role's count of the stage
  // ring's iterations over the block's tiles (a C++ int: its stage is
  // count % stages, its mbarrier parity (count / stages) & 1), once
  // >= ring_fold_at, becomes count % (2 * stages) + 2 * stages. That keeps
  // it congruent mod 2 * stages (every stage and parity unchanged),
  // >= stages (the cluster drain's window of the last `stages` iterations),
  // > 0 (register_a's not-the-first-tile test) and below ring_fold_at plus
  // a tile's iterations (ping-pong: two tiles'), where unfolded it would
  // overflow after 2^31 iterations. The persistent pass sets 2^30 where a
  // block could run that many (or a trip count is not a constant), 1 with
  // CudaOptions::ring_fold_every_tile (a testing aid).
  int64_t ring_fold_at = 0;
  // A thread-block cluster (cluster, split_k_cluster): 1, or the blocks
  // (consecutive program ids, __cluster_dims__(cluster_size, 1, 1)) that
  // share their multicast copies' stages (2), or a split-K tile's K splits
  // (2 to 8, split_k_cluster); the grid is a multiple of it.
  int cluster_size = 1;
  // The param index of a split-K workspace held in the accumulators'
  // fragment order (epilogue), -1: none. Within each [split, tile] slice of
  // BLOCK_M x BLOCK_N elements, accumulator element e of MMA thread t sits at
  // ((e / V) * threads + t) * V + e % V, V = workspace_vector: each thread's
  // elements go V at a time as one 16-byte access, and a warp's access is
  // 32 * 16 contiguous bytes (V = 1: e * threads + t, 128 contiguous bytes a
  // warp), with no staging through shared memory. The workspace is the
  // kernel's own scratch: only its partial-tile nest
  // (EpilogueForm::FragmentOrder) stores it and only nests over the same
  // fragment load it, at their own elements.
  int workspace_fragment_order = -1;
  // V above: 16 / the workspace's element bytes (4 for f32, 2 for f64) where
  // every MMA thread holds a multiple of it (wgmma and mma.sync fragments),
  // else 1 (epilogue). Measured on the H200: skinny's split-K partials
  // written and read 16 bytes at a time took 0.5-1.7 us off 20.4-20.9
  // (bench/RESULTS.md, session 21).
  int workspace_vector = 1;
  // Split-K reduced in a cluster (split_k_cluster, CudaOptions::
  // split_k_cluster): the grid's last (fastest) dim is the K split, whose
  // extent is cluster_size, so a tile's splits are one cluster and split s
  // is cluster rank s. After the main loop the MMA threads meet (their
  // rings are dead) and store the partial tile into their own shared memory
  // at offset 0, in the fragment order above (workspace_vector's layout);
  // the cluster meets (barrier.cluster, release/acquire:
  // PTX ISA 9.7.13.3); the body of the if_last_arrival runs in every block,
  // by the MMA warps w with w % cluster_size == the block's split, whose
  // loads of split s's partials read block s's shared memory (mapa +
  // ld.shared::cluster, 9.7.9.21 and 9.7.9.8); the cluster meets again
  // before any block exits. The workspace and the counter are not touched.
  bool split_k_cluster = false;
  // A portable cluster's most blocks (CUDA Programming Guide, "Thread Block
  // Clusters": 8; more needs a non-portable launch attribute).
  static constexpr int kMaxClusterBlocks = 8;
  // A measuring aid (the timeline pass, CudaOptions::block_timeline): the
  // byte offset in dynamic shared memory of a slot of tf::kTimelineSlotBytes
  // (8-byte aligned; the layout pass places it right after the mbarriers,
  // the timeline pass after every other byte where layout did not) where
  // thread 0 keeps
  // %globaltimer at the block's start, when its first warp-specialized
  // stage had landed and at the ends of its first two main loops (a
  // persistent kernel's first two tiles); at its end it
  // stores them, the end and its %smid into the module global tf_timeline
  // (tf::record_timeline, tf_status.cuh; blocks past kTimelineBlocks record
  // nothing); the runtime reads it back (CudaProgram::block_timelines).
  // -1: no timeline.
  int64_t timeline_slot = -1;
  bool block_timeline() const { return timeline_slot >= 0; }
  // The slot's bytes: four u64 times (tf::kTimelineSlotBytes, the same).
  static constexpr int64_t kTimelineSlotBytes = 32;
  std::vector<TensorMapPlan> tensor_maps;
  std::vector<std::string> notes;  // decisions worth telling (explain, the source's header)
};

}  // namespace tilefuse::tir
