// `tilefuse bench`: the plans of one program and the baselines, timed on the
// same inputs (DESIGN.md "CLI"; issue: measured decisions).
//
// GPU rows, each the median of `repeats` timed runs after `warmup` untimed
// ones, with the L2 flushed before every timed run (cuda/timing.h):
//   fused              our fused plan (one launch sequence)
//   unfused            our unfused plan
//   unfused+cuBLASLt   the unfused plan with every plain GEMM step run by
//                      cuBLASLt (CudaProgramOptions::cublaslt_gemms)
//   cuBLASLt GEMM only the cuBLASLt GEMM launches alone: the time a fused
//                      kernel should match ("cuBLAS, no gather")
//   chosen             a copy of the tuner's winner's row (tune.h: fused,
//                      unfused or unfused+cuBLASLt)
// CPU rows: the fused and unfused plans on the CPU executor, wall time.
// TFLOP/s counts 2*M*N*K per GEMM (batch included); GB/s counts the bytes of
// the program's inputs and outputs once (the compulsory traffic). Each row's
// output is compared with the f64 oracle (rel_err), unless check is off.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "graph/graph.h"

namespace tilefuse::driver {

struct BenchOptions {
  int warmup = 10;
  int repeats = 100;
  bool flush_l2 = true;
  bool baselines = true;  // the cuBLASLt rows
  bool check = true;      // rel_err of each row against the f64 oracle
  LowerOptions lower;     // config overrides for every row (e.g. --gemm-config)
  // Per-plan overrides (the tuner's best config of each plan, tune.h): when
  // set they replace `lower` for that plan's rows (unfused_lower also for
  // the unfused+cuBLASLt row, whose pointwise kernels it configures).
  std::optional<LowerOptions> fused_lower, unfused_lower;
  // The tuned choice: adds a row "chosen", the row of this plan (which runs
  // that plan with its tuned config, so the same kernels) under that name,
  // with `chosen_note` (what was chosen and why) as its note. With
  // chosen_cublaslt (the tuner's unfused+cuBLASLt won; chosen_plan is then
  // kUnfused) it is the unfused+cuBLASLt row, which then runs even without
  // `baselines`.
  std::optional<PlanKind> chosen_plan;
  bool chosen_cublaslt = false;
  std::string chosen_note;
  int cpu_threads = 0;
  // GPU: f32 GEMMs on TF32 tensor cores in our plans
  // (CompileOptions::allow_tf32) and in the cuBLASLt rows
  // (CUBLAS_COMPUTE_32F_FAST_TF32). The CPU executor stays exact.
  bool allow_tf32 = false;
  // Symbolic dims: the kernels are compiled from `compile_graph` (the
  // program's generic graph) for `specialization` (the inputs' binding,
  // driver/specialize.h), while `graph` (the program bound to the inputs'
  // sizes) gives the oracle, the FLOPs and the bytes. nullptr: `graph`.
  const Graph* compile_graph = nullptr;
  Specialization specialization;
  tir::CudaOptions cuda;  // the CUDA backend's switches for our plans
  // The cuBLASLt rows: how many of the heuristic's algorithms are timed (20
  // repeats each) before the row, the fastest kept.
  int cublaslt_algorithms = 8;
};

struct BenchRow {
  std::string name;  // "fused", "unfused", "unfused+cuBLASLt", "cuBLASLt GEMM only", "chosen"
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double tflops = 0, gbps = 0;
  double rel_err = -1;  // -1: not checked
  std::vector<CudaKernelStats> kernels;
  std::string note;  // why a row is missing / what it ran
};

struct BenchReport {
  std::string program, device, target;
  double gemm_flops = 0;  // per run
  double bytes = 0;       // inputs + outputs, per run
  std::vector<BenchRow> rows;
};

// 2*M*N*K (times batch) summed over the graph's GEMMs.
double gemm_flops(const Graph& graph);
// Bytes of every parameter and output.
double compulsory_bytes(const Graph& graph);

// Times the program on the GPU (UserError without one).
BenchReport bench_gpu(const Graph& graph, const std::vector<Tensor>& inputs,
                      const BenchOptions& options = {});
// Times the program on the CPU executor.
BenchReport bench_cpu(const Graph& graph, const std::vector<Tensor>& inputs,
                      const BenchOptions& options = {});

// The time of one compiled GPU program (median ms), for the tuner.
double time_cuda_program(CudaProgram& program, const std::vector<Tensor>& inputs,
                         const BenchOptions& options);

}  // namespace tilefuse::driver
