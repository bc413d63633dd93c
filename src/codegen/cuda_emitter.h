// The CUDA backend's code generator: one optimized Tile IR kernel (after the
// pass pipeline, copies decided by lower_copies for a CUDA target) to one
// readable CUDA C++ translation unit with one `extern "C" __global__` entry
// (DESIGN.md, "Backends and runtime").
//
// The lowering decisions made here, all recorded in CudaKernel for
// `explain` and the runtime:
//  - threads: num_warps * 32 per block, the grid flattened into blockIdx.x
//    (each program id recovered by div/mod of constants);
//  - layout: a shared tile read by an MMA GEMM is stored `swizzled`
//    (tf_copy.cuh: 16-byte chunks XOR row, so ldmatrix is free of bank
//    conflicts; the B tile of a TF32 GEMM `swizzled32`, 32-byte units XOR
//    row, for its 4-row fragment loads), every other shared buffer
//    row-major; a buffer written by a copy inside a pipelined loop gets
//    num_stages copies (a ring);
//  - lower_gemm: f16 / bf16 operands use MmaTile (ldmatrix + mma.sync
//    m16n8k16, f32 accumulators), f32 / f64 use SimtTile (one FMA per
//    product, exact) -- except f32 operands with EmitOptions::allow_tf32,
//    which use Tf32MmaTile (mma.sync m16n8k8 .tf32: operands rounded to TF32
//    with cvt.rna, f32 accumulators); the warps are arranged WARPS_M x
//    WARPS_N so that each warp tile is a multiple of 16x16 and as square as
//    possible, and the block shrinks to fewer warps when the tile has fewer
//    warp tiles;
//  - copies: "cp_async" copies become cp.async of their width with the
//    zero-fill form for masked vectors, "register" copies are computed in
//    registers and stored to shared memory element by element;
//  - pipeline: a pipelined loop with S stages issues the copies of
//    iteration i + S - 1 while computing iteration i (cp.async.commit_group /
//    wait_group S - 2, one __syncthreads per iteration);
//  - parallel loops: a nest over a fragment runs over the thread's own
//    accumulator elements (row(e), col(e)); any other nest is flattened and
//    strided over the block's threads;
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

// A `check` of the kernel, by its code: the host turns a reported status
// into `message` with the reported args.
struct CudaCheck {
  int id = 0;  // what the kernel reports in the status word (1, 2, ...)
  int64_t code = 0;  // the check's code (a category; checks may share one)
  std::string message;  // one "{}" per arg
  int num_args = 0;
};

struct CudaSharedBuffer {
  std::string name;
  std::string layout;   // "swizzled", "swizzled32" (32-byte units) or "row_major"
  int stages = 1;       // ring depth (num_stages of its pipelined loop)
  int64_t offset = 0;   // bytes from the start of dynamic shared memory
  int64_t bytes = 0;    // all stages
};

struct CudaCopy {
  std::string dst;
  std::string mode;  // "tma", "cp_async" or "register"
  int64_t width = 0; // bytes per access
  int stages = 1;    // > 1 when issued ahead in a pipelined loop
};

// A TMA tensor map the kernel takes (after tf_status, in this order, as
// `const __grid_constant__ tf::TmaDesc`): the runtime encodes it with
// cuTensorMapEncodeTiled (CUDA Driver API, "Tensor Map Object Management")
// for the buffer the kernel's `param`-th parameter binds.
struct CudaTensorMap {
  int param = 0;                   // index into the kernel's parameters (a global buffer)
  int elem_bytes = 0;              // element size (the map copies bytes: an unsigned type)
  std::vector<int64_t> dims;       // elements per dim, innermost first
  std::vector<int64_t> strides;    // bytes, of dims 1 .. rank - 1 (innermost is contiguous)
  std::vector<int> box;            // box extent per dim, innermost first
  int swizzle_bytes = 0;           // 0 (none) or 128 (CU_TENSOR_MAP_SWIZZLE_128B)
};

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
  int64_t grid = 0;                  // blocks (blockIdx.x)
  int64_t dynamic_shared_bytes = 0;  // launch's dynamic shared memory
  std::vector<CudaSharedBuffer> shared;
  std::vector<CudaCopy> copies;  // in program order
  std::vector<CudaGemm> gemms;
  std::vector<CudaCheck> checks;
  std::vector<CudaTensorMap> tensor_maps;
  std::vector<std::string> headers;  // device headers it includes
  std::vector<std::string> notes;    // decisions worth telling (e.g. fewer warps)
};

// Numeric choices of the emitter that are not the target's.
struct EmitOptions {
  // f32 x f32 GEMMs may run on TF32 tensor cores (Tf32MmaTile: operands
  // rounded to 10 mantissa bits, f32 accumulation; `--allow-tf32`, like
  // PyTorch's torch.backends.cuda.matmul.allow_tf32). Off: f32 GEMMs are
  // exact (one FMA per product).
  bool allow_tf32 = false;
};

// Generates `kernel` (params: global buffers, then scalar vars; the entry
// takes them in that order followed by `tf::Status* tf_status`) for a CUDA
// `target`. Throws InternalError for IR the CUDA backend cannot lower (hooks
// left, a fragment used outside a gemm / parallel nest, ...).
CudaKernel emit_cuda(const tir::Kernel& kernel, const tir::Target& target,
                     const EmitOptions& options = {});

// The C++ spelling of a dtype in emitted code ("tf::f16", "long long", ...).
std::string cuda_type(DType dtype);

}  // namespace tilefuse::codegen
