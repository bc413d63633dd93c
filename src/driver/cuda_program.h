// The driver's GPU run step: a CompiledProgram (compiled for a CUDA target)
// built with NVRTC through the kernel cache, loaded on the device and run.
//
// Memory follows the same contract as the CPU step (execute.h): parameters
// are uploaded contiguous, every step's output is a fresh device buffer of
// its node's shape and dtype, kernels run in plan order. One status word
// (tf_status.cuh) is shared by all kernels; after a launch sequence the host
// reads it, and a failed device-side check becomes a UserError whose message
// is the check's own, with the values the kernel reported. The device stays
// usable afterwards: nothing traps.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "driver/compile.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/timing.h"
#include "runtime/cuda/nvrtc.h"

namespace tilefuse::driver {

// What compiling and loading one kernel gave.
struct CudaKernelStats {
  std::string name;
  bool from_cache = false;   // the cubin came from the kernel cache
  double compile_ms = 0;     // NVRTC (or cache read) time
  cuda::PtxasUsage usage;    // ptxas -v: registers, spills, static smem
  int registers = 0;         // as loaded (cuFuncGetAttribute)
  int local_bytes = 0;       // local memory per thread (spills, stack)
  int64_t dynamic_shared_bytes = 0;
  int threads = 0;
  int64_t blocks = 0;
  int blocks_per_sm = 0;     // cuOccupancyMaxActiveBlocksPerMultiprocessor
  double occupancy = 0;      // resident warps / 64 warps per SM
};

// The process-wide device (device 0, primary context), opened on first use.
// Throws UserError when CUDA is unavailable.
cuda::Device& default_device();

struct CudaProgramOptions {
  // Run every plain GEMM step (no prologue, bias or epilogue; contiguous
  // row-major f16/bf16/f32 operands) with cuBLASLt instead of our kernel:
  // the "unfused + cuBLASLt" baseline of `tilefuse bench`. A GEMM step that
  // is not plain keeps our kernel; cublaslt_steps() says which were
  // replaced. An f32 GEMM runs on TF32 (CublasLtOptions::allow_tf32) when
  // the program was compiled with allow_tf32, else exact f32.
  bool cublaslt_gemms = false;
  // How many of cublasLtMatmulAlgoGetHeuristic's algorithms each cuBLASLt
  // step asks for; autotune_cublaslt() then times them and keeps the
  // fastest (1: the heuristic's first, as PyTorch's default does).
  int cublaslt_algorithms = 1;
};

// The kernels of `program` (indices into program.kernels, plan order) that
// CudaProgramOptions::cublaslt_gemms hands to cuBLASLt: its plain GEMM
// steps. Needs neither a GPU nor libcublasLt (whether cuBLASLt then has an
// algorithm for each is known only when CudaProgram builds them). The
// tuner's unfused+cuBLASLt candidate exists only when this is not empty.
std::vector<size_t> cublaslt_gemm_kernels(const CompiledProgram& program);

class CudaProgram {
 public:
  // Compiles every kernel of `program` (target must be CUDA and match the
  // device's arch family) and loads it. Throws UserError for an NVRTC
  // failure (naming the saved source), a kernel the device cannot launch,
  // or (with cublaslt_gemms) a missing libcublasLt.
  CudaProgram(const CompiledProgram& program, cuda::Device& device,
              const CudaProgramOptions& options = {});
  ~CudaProgram();
  CudaProgram(const CudaProgram&) = delete;
  CudaProgram& operator=(const CudaProgram&) = delete;

  // Uploads `inputs` (one per graph parameter, any strides) and allocates
  // every step's output; `poison` fills outputs with NaN bytes (0xFF) first.
  void bind(const std::vector<Tensor>& inputs, bool poison = false);
  // Launches every kernel in plan order on the default stream (async).
  // Needs bind().
  void launch();
  // Launches only step `index` (plan order), e.g. to time the GEMM alone.
  void launch_step(size_t index);
  // The steps run by cuBLASLt (with cublaslt_gemms), in plan order.
  std::vector<size_t> cublaslt_steps() const;
  // Times each cuBLASLt step's algorithms (CudaProgramOptions::
  // cublaslt_algorithms of them) on the bound buffers and keeps the fastest
  // of each. Needs bind().
  void autotune_cublaslt(const cuda::TimingOptions& options);
  // Waits for the device, reads the status word and throws UserError for a
  // failed check (then clears the word, so the program can run again).
  void check_status();
  // Copies the graph outputs back (contiguous tensors).
  std::vector<Tensor> outputs() const;

  // bind + launch + check_status + outputs.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, bool poison = false);

  const std::vector<CudaKernelStats>& stats() const { return stats_; }
  const CompiledProgram& program() const { return program_; }
  // When the first kernel of this program was launched (host clock, at the
  // launch call), or nullopt before any launch. For start-up figures.
  std::optional<std::chrono::steady_clock::time_point> first_launch() const {
    return first_launch_;
  }

 private:
  struct Impl;
  const CompiledProgram& program_;
  cuda::Device& device_;
  std::unique_ptr<Impl> impl_;
  std::vector<CudaKernelStats> stats_;
  std::optional<std::chrono::steady_clock::time_point> first_launch_;
};

// The NVRTC options tilefuse compiles kernels with for `arch`.
cuda::CompileOptions cuda_compile_options(const std::string& arch);

}  // namespace tilefuse::driver
