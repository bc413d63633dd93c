// The CLI's subcommands, separate from argument parsing so each stays small.
// Every command returns the process exit code: 0 ok, 1 user error (printed as
// a diagnostic), 2 internal error, 3 a failed --check.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tir/target.h"

namespace tilefuse::cli {

// 3 is apart from 2: a --check over tolerance is a finding about the program
// (an ill-conditioned but correct one fails it too), not a tilefuse bug.
enum ExitCode : int { kOk = 0, kUserError = 1, kInternalError = 2, kCheckFailed = 3 };

// The most bytes of a program file read (frontend::LoadOptions); the
// --max-program-size option of every command.
inline constexpr int64_t kDefaultMaxProgramBytes = int64_t{16} << 20;

struct RunOptions {
  std::string program;          // path of the .tfs file
  int64_t max_program_bytes = kDefaultMaxProgramBytes;
  // "NAME=SIZE" (or several, comma-separated): the sizes of the program's
  // symbolic dims (every one needs a size for run and bench; emit and
  // explain show the generic kernels without).
  std::vector<std::string> shapes;
  std::string device = "auto";  // auto (the GPU when one is usable) | cpu | cuda
  // auto: on the GPU the tuned choice (cached, else tuned now: driver/tune.h),
  // on the CPU the fused plan; fused | unfused: that plan (on the GPU with
  // its tuned config when a tuning is cached).
  std::string plan = "auto";
  bool retune = false;              // tune again even when a choice is cached (GPU)
  std::string engine = "executor";  // executor (compiled kernels) | reference (graph evaluator)
  uint64_t seed = 0;                // random-input seed
  std::vector<std::string> inputs;  // "name=file.npy"
  std::optional<std::string> save_output_dir;  // unset: don't save; "" is a user error
  bool check = false;               // compare with the f64 oracle
  int threads = 0;                  // 0: all hardware threads
  bool verbose = false;             // per-kernel compile/cache/resource lines
  bool allow_tf32 = false;          // GPU: f32 GEMMs on TF32 tensor cores
  std::vector<std::string> cuda_options;  // "NAME=0|1" (tir::CudaOptions)
  // "BMxBNxBK/stages/warps[/splitkS]" for every GEMM step (no tuning); "": none.
  std::string gemm_config;
};

// `tilefuse run`: parses the program, makes or loads its inputs, compiles it
// (the chosen plan, for the GPU's arch or the CPU) and runs its kernels on
// the GPU or the CPU executor —
// or evaluates the graph with the reference evaluator (--engine reference) —
// and prints each output's shape, dtype, checksum and the time (and with
// --check, the relative error against the f64 oracle).
int run_command(const RunOptions& options);

struct BenchOptions {
  std::string program;
  int64_t max_program_bytes = kDefaultMaxProgramBytes;
  std::vector<std::string> shapes;  // as RunOptions::shapes
  std::string device = "auto";  // auto | cpu | cuda
  bool json = false;
  uint64_t seed = 0;
  int warmup = -1;   // -1: 10 on the GPU, 1 on the CPU
  int repeats = -1;  // -1: 100 on the GPU, 5 on the CPU
  bool baselines = true;
  bool check = true;
  int threads = 0;
  std::string gemm_config;      // "BMxBNxBK/stages/warps", empty: the tuned ones (GPU)
  bool retune = false;          // tune again even when a choice is cached (GPU)
  // Write the inputs it times as <param>.npy (for compare_torch.py); given but empty: an error.
  std::optional<std::string> save_inputs_dir;
  bool allow_tf32 = false;      // GPU: f32 GEMMs (ours and cuBLASLt's) on TF32 tensor cores
  std::vector<std::string> cuda_options;  // "NAME=0|1" (tir::CudaOptions)
  std::vector<std::string> inputs;        // "name=file.npy": given inputs (as run --input)
};

// `tilefuse bench`: times the fused and unfused plans and the cuBLASLt
// baselines on random inputs (driver/bench.h) and prints a table or JSON.
// On the GPU (without --gemm-config) the plans run with their tuned configs
// (the cached tuning, else a new one) and a row "chosen" is the tuned
// winner; on the CPU "chosen" is the fused plan (what run --plan auto runs).
int bench_command(const BenchOptions& options);

struct EmitOptions {
  std::string program;
  int64_t max_program_bytes = kDefaultMaxProgramBytes;
  std::vector<std::string> shapes;  // as RunOptions::shapes (optional here)
  std::string stage = "graph";  // graph | plan | tir | tir-opt | cuda
  std::string plan = "fused";
  std::string target = "cpu";
  std::string dump_after;  // a pass name or "all": the kernels after it, before the stage
  bool allow_tf32 = false;  // CUDA: f32 GEMMs on TF32 tensor cores
  std::string gemm_config;  // "BMxBNxBK/stages/warps", empty: the template's default
  std::vector<std::string> cuda_options;  // "NAME=0|1" (tir::CudaOptions)
};

// `tilefuse emit`: prints the program at a compilation stage: the graph IR,
// the plan, the kernels as lowered (after inline_hooks) or after the whole
// pass pipeline.
int emit_command(const EmitOptions& options);

struct ExplainOptions {
  std::string program;
  int64_t max_program_bytes = kDefaultMaxProgramBytes;
  std::vector<std::string> shapes;  // as RunOptions::shapes (optional here)
  std::string target = "cpu";
  std::string plan = "fused";
  bool json = false;
  bool allow_tf32 = false;  // CUDA: f32 GEMMs on TF32 tensor cores
  std::string gemm_config;  // "BMxBNxBK/stages/warps", empty: the template's default
  std::vector<std::string> cuda_options;  // "NAME=0|1" (tir::CudaOptions)
};

// `tilefuse explain`: the kernels of the plan and every decision made for
// them (driver/explain.h), as text or --json.
int explain_command(const ExplainOptions& options);

struct TuneCommandOptions {
  std::string program;
  int64_t max_program_bytes = kDefaultMaxProgramBytes;
  // "NAME=S1,S2,...": the sizes to tune a symbolic dim at, one tuning per
  // size bucket; several symbols: every combination.
  std::vector<std::string> shapes;
  // "NAME=SIZE[,NAME=SIZE...]" as run's --shape: one size per symbol (each
  // pair is a --shapes NAME=SIZE).
  std::vector<std::string> single_shapes;
  std::string device = "auto";  // auto | cpu | cuda
  bool retune = false;
  bool allow_tf32 = false;
  uint64_t seed = 0;
  int threads = 0;
  std::vector<std::string> cuda_options;  // "NAME=0|1" (tir::CudaOptions)
};

// `tilefuse tune`: tunes the program ahead of time at each combination of
// --shapes (driver/tune.h; the tuning is kept per size bucket, where a later
// run or a call through the C API finds it) and prints one line per shape:
// its buckets and the choice. On the CPU nothing is tuned (a line says so).
int tune_command(const TuneCommandOptions& options);

// The targets --target accepts, for help and error messages.
inline constexpr const char* kTargetHelp = tir::kTargetNames;

}  // namespace tilefuse::cli
