// The driver's GPU run step: a CompiledProgram (compiled for a CUDA target)
// built with NVRTC through the kernel cache, loaded on the device and run.
//
// Two ways to run it:
//  - on host tensors (bind / launch / outputs, or run): parameters are
//    uploaded contiguous, every step's output is a fresh device buffer of its
//    node's shape (at the binding of the inputs' symbolic dims) and dtype,
//    kernels run in plan order on the default stream (the CLI, the tuner);
//  - on the caller's device memory (launch(DeviceCall, stream), the C API):
//    the inputs where they are (any layout the program's specialization
//    covers), the outputs written in place, the other step outputs in a
//    caller-given workspace, every launch on the caller's stream, nothing
//    allocated and nothing waited for, so the sequence can be captured in a
//    CUDA graph.
// Status words (tf_status.cuh) in mapped host memory, one per reporter:
// launch(DeviceCall)'s index checks, then each kernel (its check ids are
// its own: 1, 2, ...). check_status() waits for the device and reads them;
// poll_status() reads them without waiting (a kernel that has not finished
// has not reported yet). The first word in launch order with a report wins
// (the first failure in program order, where the CPU executor stops): it
// becomes a UserError whose message is the check's own, with the values
// the kernel reported; the words are then cleared, and the device stays
// usable: nothing traps.
//
// Thread safety: one launch at a time per CudaProgram (the launch reuses
// per-kernel argument storage); distinct CudaPrograms are independent.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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
  int64_t blocks = 0;  // the grid at the compiled sizes (-1: symbolic; a persistent kernel's tiles)
  int64_t persistent_blocks = 0;  // a persistent kernel's launch: min(tiles, SMs) or its stream-K
                                  // units (0: not persistent or symbolic)
  int blocks_per_sm = 0;     // cuOccupancyMaxActiveBlocksPerMultiprocessor
  double occupancy = 0;      // resident warps / 64 warps per SM
};

// "384 threads x 512 blocks", or for a persistent kernel "384 threads x 132
// persistent blocks over 512 tiles" (`tilefuse run -v` and bench's lines).
std::string launch_shape_text(const CudaKernelStats& stats);

// One launch of a kernel compiled with the block timeline
// (CudaOptions::block_timeline, a measuring aid), summarized. Times are in
// microseconds from %globaltimer (ns); each phase is {min, median, max}
// over the blocks that recorded it.
struct BlockTimeline {
  std::string kernel;
  int64_t blocks = 0;          // blocks that recorded (at most tf::kTimelineBlocks)
  int64_t launched = 0;        // blocks launched
  int sms = 0;                 // distinct SMs they ran on
  int max_blocks_on_an_sm = 0;
  double start_spread_us = 0;  // the last block's start after the first's
  // start -> its first stage landed (blocks with that record: a
  // warp-specialized loop); start (or the first stage) -> the end of its
  // first main loop; that -> the block's end (blocks with a loop record);
  // the first main loop's end -> the second's (blocks with both: a
  // persistent kernel's first tile's epilogue and second tile's main loop);
  // start -> end (every block).
  double first_stage_us[3] = {0, 0, 0};
  double loop_us[3] = {0, 0, 0};
  double after_loop_us[3] = {0, 0, 0};
  double second_loop_us[3] = {0, 0, 0};
  double block_us[3] = {0, 0, 0};
  int64_t first_stage_blocks = 0;  // blocks with a first-stage record
  int64_t loop_blocks = 0;         // blocks with a loop record
  int64_t second_loop_blocks = 0;  // blocks with a second loop record
  double span_us = 0;              // the first start to the last end
};

// The words of one block's record (tf::kTimelineWords): start, first stage
// landed or 0, first main loop's end or 0, second main loop's end or 0, end
// (ns), SM id.
inline constexpr int kBlockTimelineWords = 6;

// Summarizes the records of `launched` blocks (kBlockTimelineWords a block,
// tf::record_timeline), blocks past the records' size or with a zero start
// skipped.
BlockTimeline summarize_block_timeline(const std::string& kernel,
                                       const std::vector<uint64_t>& records, int64_t launched);

// "gemm0: 128 blocks on 128 SMs (at most 1 an SM), started within 0.19 us;
// start to loop end 13.1 / 13.6 / 14.2 us, loop end to exit ...": one line.
std::string format_block_timeline(const BlockTimeline& t);

// The process-wide device (device 0, primary context), opened on first use.
// Throws UserError when CUDA is unavailable.
cuda::Device& default_device();
// Device `ordinal` (its primary context), opened on first use and made
// current on the calling thread. Throws UserError when there is no such device.
cuda::Device& cuda_device(int ordinal);

// One call on the caller's device memory (see above).
struct DeviceCall {
  std::vector<int64_t> binding;                     // the symbols' values (bind_symbols)
  std::vector<cuda::CUdeviceptr> inputs;            // per parameter: its first element
  std::vector<std::vector<int64_t>> input_strides;  // per parameter, elements
  std::vector<cuda::CUdeviceptr> outputs;  // per graph output: contiguous, of its bound shape
  cuda::CUdeviceptr workspace = 0;         // scratch for the other step outputs
  std::size_t workspace_bytes = 0;
};

struct CudaProgramOptions {
  // Run every plain GEMM step (no prologue, bias or epilogue; contiguous
  // row-major, 16-byte aligned f16/bf16/f32 operands in the program's
  // specialization; fixed sizes) with cuBLASLt instead of our kernel:
  // the "unfused + cuBLASLt" baseline of `tilefuse bench`. A GEMM step that
  // is not plain keeps our kernel; cublaslt_steps() says which were
  // replaced. An f32 GEMM runs on TF32 (CublasLtOptions::allow_tf32) when
  // the program was compiled with allow_tf32, else exact f32.
  bool cublaslt_gemms = false;
  // The cache root of the kernel cache ("": default_cache_root()).
  std::string cache_root;
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

// A program's inputs in device memory, uploaded once for every CudaProgram
// bound to them (CudaProgram::bind(std::shared_ptr<const DeviceInputs>)):
// bench's rows (fused, unfused, unfused+cuBLASLt) read one copy of the
// inputs, not one a row, so a program whose inputs take more than a third of
// the GPU's memory still benches. Input i is contiguous (a strided host
// tensor is copied contiguous first) in a cuMemAlloc buffer of its own
// (256-byte aligned, at least 16 bytes). No kernel writes a parameter, so
// the copy stays as uploaded while programs run on it; a program bound to it
// keeps it alive (shared_ptr), and it is freed when the last one goes.
class DeviceInputs {
 public:
  // Uploads `inputs` (host tensors, any strides, in the order of a graph's
  // parameters) to `device`. Throws UserError when the device is out of
  // memory (cuda::check_cuda), nothing kept.
  DeviceInputs(cuda::Device& device, const std::vector<Tensor>& inputs);
  DeviceInputs(const DeviceInputs&) = delete;
  DeviceInputs& operator=(const DeviceInputs&) = delete;
  ~DeviceInputs();

  cuda::Device& device() const { return device_; }
  // The host tensors as given (their storage shared, not copied): a bind
  // checks them against its program (bind_symbols, check_unread_indices).
  const std::vector<Tensor>& host() const { return host_; }
  // Every input's first element, in order.
  std::vector<cuda::CUdeviceptr> ptrs() const;
  // Every input's strides in elements (contiguous_strides of its shape).
  const std::vector<std::vector<int64_t>>& strides() const { return strides_; }
  // Device memory held, all inputs, in bytes (each buffer's size).
  std::size_t bytes() const;
  // How many DeviceInputs this process has made: every upload of a
  // program's inputs to the device (a CudaProgram::bind of host tensors
  // makes one). For tests: bench_gpu uploads its inputs once, whatever the
  // number of rows.
  static int64_t uploads();

 private:
  cuda::Device& device_;
  std::vector<Tensor> host_;
  std::vector<cuda::DeviceBuffer> buffers_;
  std::vector<std::vector<int64_t>> strides_;
};

// The host path's table of value addresses (CudaProgram::bind), by ValueId
// (program.graph.size() entries): parameter i at `inputs[i]`, kernel k's
// output (plan order) at `step_outputs[k]` (a later kernel's where two
// write one value), 0 for a value in no buffer. The parameters' addresses
// are the caller's as given: programs bound to one DeviceInputs read the
// same copy of the inputs, each writing its own outputs. Throws
// InternalError where the counts are not the program's parameters' and
// kernels'.
std::vector<cuda::CUdeviceptr> host_value_addresses(
    const CompiledProgram& program, const std::vector<cuda::CUdeviceptr>& inputs,
    const std::vector<cuda::CUdeviceptr>& step_outputs);

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

  // Uploads `inputs` (one per graph parameter, any strides; a DeviceInputs
  // of this program's own) and allocates every step's output; `poison`
  // fills outputs with NaN bytes (0xFF) first (the inputs never). The
  // previous binding's buffers are freed first. Throws UserError (nothing
  // bound) for inputs that do not fit the parameters (bind_symbols), an
  // index no kernel reads that is out of range (check_unread_indices), out
  // of device memory, or where a kernel's grid at these sizes is more than
  // a launch allows (launch_blocks).
  void bind(const std::vector<Tensor>& inputs, bool poison = false);
  // The same on inputs already on the device, shared with other programs
  // (bench's rows): nothing uploaded, only the step outputs allocated (and
  // poisoned with `poison`); the program keeps `inputs` alive while bound
  // to them. Throws as above, and InternalError for null inputs or inputs
  // on another device.
  void bind(std::shared_ptr<const DeviceInputs> inputs, bool poison = false);

  // Bytes of workspace a DeviceCall at `binding` needs: every step output
  // that is not a graph output, each at a 256-byte aligned offset.
  std::size_t workspace_bytes(const std::vector<int64_t>& binding) const;
  // Launches every kernel in plan order on `stream` for `call` (then copies
  // a graph output that is a parameter, a strided one by a copy kernel, or a
  // value returned twice). Throws
  // UserError for a workspace smaller than workspace_bytes() or a kernel
  // grid more than a launch allows (launch_blocks), both before anything
  // launches; launch errors as cuda::check_cuda. Asynchronous: see
  // poll_status / check_status.
  // Where indices may go unread at the call's sizes
  // (driver::indices_may_go_unread: `x[i] @ w` with K or N of 0, `x[i][0]`,
  // a gather of a gather), the kernels do not check every index, and the
  // inputs are not copied back for check_unread_indices: first, on
  // `stream`, one small kernel per gather whose index tensor is a parameter
  // checks all of its indices (tf_index_check.cuh; the lowest failing
  // position reported, the CPU executor's error at poll_status). An index
  // tensor computed by the program is not checked there (README).
  void launch(const DeviceCall& call, cuda::CUstream stream);
  // How many index check kernels launch(DeviceCall) has launched (none
  // where indices cannot go unread: the common call costs nothing).
  int64_t index_check_launches() const;
  // Reads the status word without waiting and throws UserError for a check
  // that a finished kernel failed (clearing the word).
  void poll_status();
  // Waits for `stream` (cuStreamSynchronize), then as poll_status.
  void check_status(cuda::CUstream stream);
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
  // Copies the graph outputs back (contiguous tensors). Needs bind(): a
  // program whose last bind threw is refused (InternalError).
  std::vector<Tensor> outputs() const;

  // bind + launch + check_status + outputs.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, bool poison = false);

  // With kernels compiled under CudaOptions::block_timeline: zeroes their
  // records, calls `before_launch` (if any: e.g. cuda::flush_l2, so the
  // recorded launch starts from a timed repeat's state), launches every
  // kernel once (as launch()), waits, and returns each such kernel's summary
  // (plan order); empty when none has a timeline. Needs bind();
  // check_status's errors.
  std::vector<BlockTimeline> block_timelines(const std::function<void()>& before_launch = {});

  const std::vector<CudaKernelStats>& stats() const { return stats_; }
  cuda::Device& device() const { return device_; }
  const CompiledProgram& program() const { return program_; }
  // When the first kernel of this program was launched (host clock, at the
  // launch call), or nullopt before any launch. For start-up figures.
  std::optional<std::chrono::steady_clock::time_point> first_launch() const {
    return first_launch_;
  }

 private:
  struct Impl;
  // Runs `launches` (work on `stream`), then records Impl::launched on
  // `stream` unless it is being captured into a CUDA graph (one
  // cuStreamIsCapturing and one cuEventRecord); also where `launches`
  // throws, so that what it launched before is waited for too.
  // (A template, for no std::function allocation a call; defined and used
  // in cuda_program.cpp alone.)
  template <class Launches>
  void record_after(cuda::CUstream stream, Launches&& launches);
  // bind()'s checks of the host tensors `host` against the program
  // (bind_symbols, check_unread_indices), after which the previous binding
  // is freed; returns their binding. Leaves the program unbound, also when
  // it throws.
  std::vector<int64_t> unbind_for(const std::vector<Tensor>& host);
  // bind()'s common part, once the inputs passed its checks at `binding`
  // and the previous binding was freed: allocates (and with `poison` fills)
  // every step's output, fills the address table and prepares the launches.
  void bind_on(std::shared_ptr<const DeviceInputs> inputs, const std::vector<int64_t>& binding,
               bool poison);
  // launch(DeviceCall)'s launches, once every check passed: the index
  // checks, the kernels at `where` (by ValueId), the outputs' copies.
  void launch_call(const DeviceCall& call, const std::vector<cuda::CUdeviceptr>& where,
                   cuda::CUstream stream);
  // launch(DeviceCall)'s check of the indices no kernel reads.
  void launch_index_checks(const DeviceCall& call, cuda::CUstream stream);
  // launch(DeviceCall)'s copy of a parameter returned as is whose input
  // (`src`, `shape`, `strides` in elements) is not contiguous, to the
  // contiguous output at `dst` (tf_view_copy.cuh), on `stream`.
  void copy_view(cuda::CUdeviceptr dst, cuda::CUdeviceptr src, DType dtype, const Shape& shape,
                 const std::vector<int64_t>& strides, cuda::CUstream stream);
  // The device address of reporter `reporter`'s status word: 0 the index
  // checks, 1 + i kernel i (plan order).
  cuda::CUdeviceptr status_word(size_t reporter) const;
  // The device address of the 8 words after the status words where the
  // index checks' report puts the index tensor's shape (tf_index_check.cuh).
  cuda::CUdeviceptr index_check_shape() const;
  // The UserError of an index check's report (`code`; its args: value,
  // position, size; the index tensor's reported `shape`, 8 words).
  [[noreturn]] void throw_index_check_error(int32_t code, const int64_t* args,
                                            const int64_t* shape) const;
  // The gather a report (`code` in status word `word`, status_word's
  // numbering) is about when it is an index error: an index check's
  // gather, or the Index node at a kernel's bounds check's place; nullopt
  // for any other report.
  std::optional<ValueId> reported_gather(size_t word, int32_t code) const;
  // Kernels [begin, end)'s scalars and grids at `binding` (and the inputs'
  // strides), for launch_kernels; throws launch_blocks' UserError for the
  // first grid no launch can take, so a caller that prepares every kernel
  // before its first launch finds a bad grid with nothing launched.
  void prepare_launches(const std::vector<int64_t>& binding,
                        const std::vector<std::vector<int64_t>>& input_strides, size_t begin,
                        size_t end);
  // Launches kernels [begin, end), as prepare_launches left them at
  // `binding`, with each value at `where` (by ValueId; 0 for values that
  // are not in memory).
  void launch_kernels(const std::vector<cuda::CUdeviceptr>& where,
                      const std::vector<int64_t>& binding, size_t begin, size_t end,
                      cuda::CUstream stream);
  const CompiledProgram& program_;
  cuda::Device& device_;
  std::unique_ptr<Impl> impl_;
  std::vector<CudaKernelStats> stats_;
  std::optional<std::chrono::steady_clock::time_point> first_launch_;
};

// The blocks of a kernel's launch over a grid of `extents` (its grid dims
// at a call's sizes, outermost first; the launch is 1-D): their product, 0
// where one is 0 or less (an empty grid launches nothing). Throws UserError
// (kValue) naming `kernel`, the extents and their product where it is over
// `max_blocks` (the device's CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2^31 - 1)
// or over int64.
int64_t launch_blocks(const std::string& kernel, const std::vector<int64_t>& extents,
                      int64_t max_blocks);

// The NVRTC options tilefuse compiles kernels with for `arch`.
cuda::CompileOptions cuda_compile_options(const std::string& arch);

// The source of launch(DeviceCall)'s helper kernels, compiled as the
// program's kernels are: the index checks (tf_check_indices_i32 / _i64,
// tf_index_check.cuh) and the copy of a strided parameter returned as is
// (tf_copy_view_1 / _2 / _4 / _8 by element size, tf_view_copy.cuh).
std::string index_check_source();

// TILEFUSE_OVERRIDE_SOURCE=DIR: the text of DIR/<kernel>.cu, nullopt where
// there is no such file; a user error where it is no regular file (a FIFO,
// a device), is over 64 MiB or cannot be read.
std::optional<std::string> read_override_source(const std::string& dir, const std::string& kernel);
// An override source may launch with more dynamic shared memory than the
// emitted kernel (a hand-written variant that stages more): a line
// "// tilefuse-override: dynamic_shared_bytes=N" (N decimal bytes) says so.
// nullopt without such a line; a user error where N is not a decimal
// number below 2^31.
std::optional<int64_t> override_dynamic_shared_bytes(std::string_view source);

// TILEFUSE_DUMP_CUBIN=DIR: writes DIR/<kernel>.cu and DIR/<kernel>.cubin,
// creating DIR; a user error naming the path where that fails.
void dump_kernel_files(const std::string& dir, const std::string& kernel,
                       std::string_view source, std::string_view cubin);

}  // namespace tilefuse::driver
