// A program callable on the caller's tensors: what the C API
// (include/tilefuse/tilefuse.h) and the Python package run.
//
// A Callable holds one parsed program (its generic graph: symbolic dims at
// no particular size) and compiles it lazily, once per specialization the
// calls need (driver/specialize.h: the symbols' divisibility, the index
// width, the inputs' layouts and alignments) and per plan and config (the
// tuned choice of the call's size bucket, else the heuristic's), on the
// device the tensors are on. A call then binds the symbols from its
// inputs, checks every argument, and runs the kernels on the inputs and
// outputs where they are:
//  - CUDA: every launch on the caller's stream, scratch in the caller's
//    workspace, nothing allocated and nothing waited for (so a call can be
//    captured in a CUDA graph once the sizes were called before); a failed
//    bounds check is read from the status word without a synchronization,
//    so it is reported by a later call of this program (once the failing
//    kernel finished) or by synchronize(), or in the same call with
//    CallContext::sync;
//  - CPU: the CPU executor, synchronously (an index error in the call).
//
// Errors are UserError (with ErrorKind kType / kValue naming the argument,
// kIndex for an index out of range), WorkspaceTooSmall, or InternalError.
// Thread safety: calls of one Callable are serialized by a lock (a first
// call at new sizes compiles under it); distinct Callables are independent.
// Contexts: a method that runs on a GPU makes its primary context current
// to work there, and puts the caller's current context (or none) back when
// it returns or throws (cuda::CurrentContextGuard): a PyTorch caller's
// current device stays what it was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "frontend/frontend.h"
#include "driver/specialize.h"
#include "driver/tune.h"
#include "graph/graph.h"
#include "lower/specialization.h"
#include "runtime/cuda/device.h"

namespace tilefuse::driver {

enum class DeviceKind { kCpu, kCuda };

// A tensor of a call: its first element, dtype, shape and strides
// (elements, non-negative), and where it is.
struct CallTensor {
  DeviceKind device = DeviceKind::kCpu;
  int device_id = 0;
  void* data = nullptr;
  DType dtype = DType::F32;
  Shape shape;
  std::vector<int64_t> strides;
};

// Whether `t`'s memory is where its device says, given what the driver knows
// of t.data (`info`): nullopt when it is (or `t` has no elements: nothing is
// addressed), else the problem, worded to follow the tensor's name ("is
// declared on cuda:1 (DLPack kDLCUDA) but its memory is on cuda:0"). A CUDA
// tensor needs device memory of its GPU or managed memory; a CPU tensor
// anything but device memory (pageable, page-locked or managed memory).
std::optional<std::string> placement_problem(const CallTensor& t, const cuda::PointerInfo& info);

struct CallableOptions {
  // Where calls may run: "auto" (where the tensors are), "cpu" or "cuda"
  // (tensors elsewhere are an error).
  std::string device = "auto";
  // "auto": on a GPU the tuned choice of the call's size bucket when one is
  // cached (and tuning is on), else the fused plan; on the CPU the fused
  // plan. "fused" / "unfused": that plan (with its tuned config when cached).
  std::string plan = "auto";
  bool allow_tf32 = false;  // f32 GEMMs on TF32 tensor cores (GPU)
  // Use the tuning cache's choices (tune() and `tilefuse tune` fill it; a
  // call never tunes). false: heuristic configs only.
  bool tuning = true;
  std::string cache_root;  // the kernel and tuning caches' root; "": the default
  int cpu_threads = 0;     // CPU executor threads; 0: all
};

struct CallContext {
  void* stream = nullptr;  // CUstream for the launches; nullptr: the default stream
  void* workspace = nullptr;  // device scratch (workspace_bytes() of it)
  std::size_t workspace_bytes = 0;
  bool sync = false;  // CUDA: wait for the stream and report a failed check now
};

// A call's workspace is smaller than its plan needs: nothing ran.
class WorkspaceTooSmall : public UserError {
 public:
  explicit WorkspaceTooSmall(std::size_t needed);
  std::size_t needed() const { return needed_; }

 private:
  std::size_t needed_;
};

// The names outputs are known by: the variable each was bound to, else
// out<i>; a name used twice gets `_i` (i its position).
std::vector<std::string> output_names(const Graph& graph);

// Tunes `generic` (a parsed program) at `values`, its symbols' sizes (none
// for a fixed program), on random inputs of `seed`, with `options` (device,
// retune, allow_tf32, cache_root; the specialization is the binding's), and
// returns one line: "NAME: T=64, M=100 (bucket T=64, M=128): <the choice>
// (cached | searched N candidates in X s)"; without `gpu`, "...: not tuned:
// ..." (the CPU tunes nothing). Throws UserError for missing or unknown
// sizes and whatever tune() throws.
std::string tune_at(const Program& generic, const SymbolValues& values, TuneOptions options,
                    bool gpu, uint64_t seed = 0);

class Callable {
 public:
  // Parses `source` (`file` names it in diagnostics). Throws UserError with
  // the location of a malformed program, or for bad options.
  Callable(std::string source, std::string file, CallableOptions options);
  // Waits for each loaded program's last launch (not for the whole device:
  // a CUDA graph capture running on another stream goes on undisturbed),
  // then unloads and frees; never throws. A call captured into a CUDA graph
  // has no launch to wait for: the graph holds this program's kernels and
  // buffers, so it must not be launched once the Callable is gone.
  ~Callable();
  Callable(const Callable&) = delete;
  Callable& operator=(const Callable&) = delete;

  const Program& program() const { return program_; }
  const CallableOptions& options() const { return options_; }

  // The signature as JSON:
  //   {"name", "file", "symbols": ["T", ...],
  //    "parameters": [{"name", "dtype", "shape": [4096 | "T", ...],
  //                    "range": [lo, hi] (numbers or "T" / "-T"; absent without)}],
  //    "outputs": [{"name", "dtype", "shape": [...]}]}
  nlohmann::json signature() const;

  // The outputs' shapes for these inputs (their symbols bound); throws as a
  // call would for bad inputs.
  std::vector<Shape> output_shapes(const std::vector<CallTensor>& inputs) const;
  // Device scratch a call with these inputs needs (0 on the CPU).
  std::size_t workspace_bytes(const std::vector<CallTensor>& inputs);

  // Runs the program (see above). `outputs`: one per graph output, of its
  // dtype and bound shape, contiguous, on the inputs' device (16-byte
  // aligned on CUDA).
  void call(const std::vector<CallTensor>& inputs, const std::vector<CallTensor>& outputs,
            const CallContext& context);

  // Waits for every device this program ran on, then reports (throws) a
  // failed check of any earlier call.
  void synchronize();

  // explain's account (driver/explain.h) of the kernels for `target` ("":
  // where calls would run: the GPU's arch, else cpu), specialized for
  // `inputs` when given (else the generic kernels).
  nlohmann::json explain(const std::vector<CallTensor>* inputs, const std::string& target);

  // Tunes ahead of time (GPU) at each binding, keeping the result per size
  // bucket in the tuning cache; returns one line per binding (as `tilefuse
  // tune` prints). Tuning needs a CUDA device: with device "cpu", or where
  // no GPU is usable, it checks the bindings (UserError kValue naming a
  // missing or unknown size), then throws UserError kUnsupported saying
  // why, and tunes nothing.
  std::vector<std::string> tune(const std::vector<SymbolValues>& sizes, bool retune);

  // How many programs were compiled so far (one per specialization, plan
  // and config the calls needed).
  int compile_count() const;

 private:
  struct Entry;
  struct Impl;
  // The compiled program a call on this device with this specialization
  // runs (compiled and loaded on first use; a UserError instead while
  // `stream` is being captured into a CUDA graph). Needs the lock.
  Entry* resolve(DeviceKind kind, int device_id, const Specialization& spec, void* stream);
  Program program_;
  CallableOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tilefuse::driver
