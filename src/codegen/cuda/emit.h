// The CUDA backend's printer: one Tile IR kernel after the CUDA pass table
// (codegen/cuda/passes/passes.h), whose kernel plan (tir/plan.h) holds every
// decision, to one readable CUDA C++ translation unit with one
// `extern "C" __global__` entry (DESIGN.md, "Backends and runtime";
// docs/architecture.md).
//
// The printer decides nothing: the block size, the shared layout and
// offsets, each copy's mechanism and width, each loop's form, the MMA
// tiles, the epilogues and the barriers are the plan's. It spells them:
//  - threads: the grid flattened into blockIdx.x (each program id recovered
//    by div/mod of the extents: constants, or expressions of the scalar
//    params of symbolic dims); a thread-distributed nest strided over the
//    block's threads (a fixed-trip unrolled loop where the work is a whole
//    number of rounds of at most 64);
//  - copies: `cp_async` as cp.async of their width with the zero-fill form
//    for masked vectors, `register` computed in registers (the vector load
//    a vector at a time) and stored to shared memory, `tma` as
//    cp.async.bulk.tensor boxes on the stage's `full` mbarrier;
//  - loops: each PipelineForm with its own waits and barriers;
//  - accumulators: MmaTile / Tf32MmaTile / WgmmaTile / SimtTile of
//    src/runtime/device/tf_gemm.cuh and tf_wgmma.cuh; an epilogue nest over
//    the thread's own accumulator elements (row(e), col(e));
//  - checks: `check` reports into the status word (tf_status.cuh); the host
//    formats the message from CudaKernel::checks.
// Kernels use only the embedded device headers (src/runtime/device/*.cuh)
// and no CUDA toolkit header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tir/ir.h"
#include "tir/target.h"

namespace tilefuse::codegen {

// The most args a check reports (tf::kStatusArgs, tf_status.cuh: the
// status word's room): a gather's bounds check over an index tensor of 8
// dims has 10.
constexpr int kStatusArgs = 10;

// A `check` of the kernel, by its code: the host turns a reported status
// into `message` with the reported args.
struct CudaCheck {
  int id = 0;  // what the kernel reports in the status word (1, 2, ...)
  int64_t code = 0;  // the check's code (a category; checks may share one)
  std::string message;  // one "{}" per arg
  int num_args = 0;
  SourceLoc loc;  // the checked operation's place in the program
};

struct CudaSharedBuffer {
  std::string name;
  std::string layout;   // "swizzled", "swizzled32" (32-byte units) or "row_major"
  int stages = 1;       // ring depth (num_stages of its pipelined loop)
  int64_t offset = 0;   // bytes from the start of dynamic shared memory
  int64_t bytes = 0;    // all stages
};

// A pipelined loop as printed (its PipelinePlan).
struct CudaLoop {
  std::string var;   // the loop var's name
  std::string form;  // pipeline_form_name: in_order, ring, fragment_pipelined, wgmma_async, warp_specialized
  int stages = 1, issue_ahead = 0, wgmma_in_flight = 0;
  int producer_threads = 0, consumer_threads = 0;      // warp_specialized
  int producer_registers = 0, consumer_registers = 0;  // setmaxnreg budgets (0: none)
  std::string why;                                      // in_order: why
  bool single_issuer = false;  // warp_specialized: producer thread 0 issues every copy (TMA)
};

// An epilogue nest as printed (its EpiloguePlan).
struct CudaEpilogue {
  std::string form;  // per_element, paired, staged
  bool stmatrix = false;
  bool contiguous_chunks = false;  // staged: 16-byte chunks proved contiguous and aligned
  bool pair_cast = false;          // staged: f32 pairs cast to f16/bf16 together
  bool per_warp = false;           // staged: by each MMA warp in its own buffer, no block barrier
  bool tma_store = false;          // staged: stored by TMA boxes (per warp: a box a slab)
  std::string why;   // paired: why not staged
};

struct CudaCopy {
  std::string dst;
  std::string mode;  // "tma", "cp_async" or "register"
  int64_t width = 0; // bytes per access
  int stages = 1;    // > 1 when issued ahead in a pipelined loop
  bool cache_all = false;  // cp_async: .ca (through L1)
  bool hoisted = false;    // cp_async: source addresses computed once, before the loop
  // cp_async, hoisted: .ca or .cg chosen per tile by its repeated rows
  // (CopyPlan::cache_by_repeats; cache_all then says only that .ca may be).
  bool l1_by_repeats = false;
  // fragment: loads by ld.global.nc.L1::no_allocate (CopyPlan::no_allocate)
  bool no_allocate = false;
  // fragment: the loads' L2 prefetch size in bytes, 0 or 256 (CopyPlan::l2_prefetch)
  int l2_prefetch = 0;
  // fragment: 32-bit loads straight into wgmma's register order (CopyPlan::word_loads)
  bool word_loads = false;
};

// A TMA tensor map the kernel takes (after tf_status, in this order, as
// `const __grid_constant__ tf::TmaDesc`): lower_copies' TensorMapPlan.
using CudaTensorMap = tir::TensorMapPlan;

struct CudaGemm {
  std::string family;  // "mma.sync.m16n8k16", "mma.sync.m16n8k8.tf32" or "simt.fma"
  std::string dtype;   // operand dtype
  int block_m = 0, block_n = 0, block_k = 0;
  int warps_m = 0, warps_n = 0;  // MMA only
  int elems_per_thread = 0;      // accumulator registers per thread
};

struct CudaKernel {
  std::string name;    // the extern "C" entry point
  std::string source;  // the translation unit
  tir::Target target;
  int num_threads = 0;               // per block
  // A warp-specialized main loop's producer warpgroup: the last
  // producer_threads of the block issue the copies, the others run the MMAs
  // (0: no warp specialization).
  int producer_threads = 0;
  // Blocks (blockIdx.x); -1 when the grid's extents depend on scalar params
  // (symbolic dims): the runtime then evaluates the kernel's grid extents at
  // each launch, and the kernel recovers its program ids from the same
  // expressions. A persistent kernel's tiles.
  int64_t grid = 0;
  // A persistent kernel (LaunchPlan::persistent): launch min(grid, SMs)
  // blocks, rounded down to whole clusters; each takes tiles block,
  // block + gridDim.x, ...
  bool persistent = false;
  // Blocks a cluster (LaunchPlan::cluster_size, __cluster_dims__(n, 1, 1)):
  // a persistent kernel launches a multiple of it.
  int cluster_size = 1;
  // Persistent stream-K (LaunchPlan::stream_k_units): launch exactly this
  // many blocks (0: not stream-K).
  int64_t stream_k_units = 0;
  // Ping-pong (LaunchPlan::consumer_teams): 2 teams of the MMA threads, each
  // taking the block's tiles in turn; num_threads counts both.
  int consumer_teams = 1;
  // Block timeline records in the module global tf_timeline
  // (LaunchPlan::block_timeline, CudaProgram::block_timelines).
  bool block_timeline = false;
  int64_t dynamic_shared_bytes = 0;  // launch's dynamic shared memory
  std::vector<CudaSharedBuffer> shared;
  std::vector<CudaCopy> copies;  // in program order
  std::vector<CudaGemm> gemms;
  std::vector<CudaLoop> loops;          // pipelined loops, in program order
  std::vector<CudaEpilogue> epilogues;  // epilogue nests, in program order
  std::vector<CudaCheck> checks;
  std::vector<CudaTensorMap> tensor_maps;
  std::vector<std::string> headers;  // device headers it includes
  std::vector<std::string> notes;    // decisions worth telling (e.g. fewer warps)
};

// Prints `kernel` (after the CUDA pass table: its LaunchPlan is defined;
// params: global buffers, then scalar vars; the entry takes them in that
// order followed by `tf::Status* tf_status` and the tensor maps) for a CUDA
// `target`. Scalar params are the sizes of symbolic dims and run-time
// strides (lower/specialization.h: never negative); a global buffer's
// offsets are 32-bit where its constant sizes prove it, or where the
// kernel's `index_bits` attribute is 32 (the runtime checked that every
// offset fits), else 64-bit. Throws InternalError for IR the CUDA backend cannot lower (no
// plan, hooks left, a fragment used outside a gemm / parallel nest, ...).
CudaKernel emit_cuda(const tir::Kernel& kernel, const tir::Target& target);

// The C++ spelling of a dtype in emitted code ("tf::f16", "long long", ...).
std::string cuda_type(DType dtype);

}  // namespace tilefuse::codegen
