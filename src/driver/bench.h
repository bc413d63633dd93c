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
// TFLOP/s counts 2*M*N*K per GEMM (batch included); GB/s counts the bytes
// the program must move at least (min_traffic_bytes: each gathered row read
// once, each output written once, the other inputs, weights and indices,
// once), whatever the plan moves; on the GPU each row also gets that rate as
// a fraction of the device's copy bandwidth, measured in the same call
// (cuda::measure_copy_bandwidth: a 1 GiB device-to-device copy, timed like
// the kernels; issue 12). Each row's output is compared with the f64 oracle
// (rel_err: oracle_error, the figure `run --check` prints), unless check is
// off.
#pragma once

#include <cstddef>
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
  // GPU: after `warmup`, untimed runs for about this long (ms) so that the
  // clocks have come up from idle (cuda::TimingOptions::warmup_ms).
  double warmup_ms = 100;
  bool flush_l2 = true;
  bool baselines = true;  // the cuBLASLt rows
  bool check = true;      // rel_err of each row against the f64 oracle (oracle_error)
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
  // GPU: time a device-to-device copy of this many bytes (read and written
  // once each) in the same call, the ceiling each row's GB/s is compared
  // with; 0 skips it (copy_gbps stays 0).
  std::size_t copy_bytes = std::size_t{1} << 30;
};

struct BenchRow {
  std::string name;  // "fused", "unfused", "unfused+cuBLASLt", "cuBLASLt GEMM only", "chosen"
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double tflops = 0;
  double gbps = 0;           // min_bytes / median time, 1e9 bytes a second
  double copy_fraction = 0;  // gbps / the report's copy_gbps; 0 when that was not measured
  double rel_err = -1;  // -1: not checked
  std::vector<CudaKernelStats> kernels;
  // Kernels compiled with CudaOptions::block_timeline: one launch after the
  // timed ones, summarized (CudaProgram::block_timelines); else empty.
  std::vector<BlockTimeline> timelines;
  std::string note;  // why a row is missing / what it ran
};

struct BenchReport {
  std::string program, device, target;
  double gemm_flops = 0;  // per run
  double min_bytes = 0;   // min_traffic_bytes(graph), per run
  // The device's copy bandwidth measured in this call (GPU): bytes read plus
  // bytes written over the median time of a BenchOptions::copy_bytes copy,
  // 1e9 bytes a second; 0 when not measured (copy_note says why).
  double copy_gbps = 0;
  std::string copy_note;
  std::vector<BenchRow> rows;
};

// 2*M*N*K (times batch) summed over the graph's GEMMs.
double gemm_flops(const Graph& graph);

// The bytes a run of `graph` must move through memory at least, whatever its
// plan (issue 12, item 4), in bytes:
//   - an input (Parameter) whose every use is the gathered operand of an
//     Index, directly or through views (x[idx], x.T[idx], x[:, idx]):
//     each gathered element once, i.e. the numel of each such Index's
//     result times the input's element size, summed over those Index nodes.
//     An index with repeats reads a row again: a row is counted each time it
//     is gathered, since a kernel cannot know that a later row repeats it
//     (for an index with more rows than the table this exceeds the table);
//   - any other input (weights, index tensors, an input also used directly):
//     its full size once (an input nothing uses: nothing);
//   - each graph output: its full size once (written; an output that is also
//     an input, returned unchanged, still counts: the runtime copies it).
// Intermediate values count nothing: the fused ideal keeps them on chip.
// Example: `x: f16[T, 96], idx: i64[M], w: f16[96, 128] -> x[idx] @ w`
// moves M*96*2 + M*8 + 96*128*2 + M*128*2 bytes (pointcloud_gather:
// 478,175,232 at M = 2^20).
double min_traffic_bytes(const Graph& graph);

// Times the program on the GPU (UserError without one). Every row is
// compiled, loaded and checked first; then the rows are timed together, one
// launch of each a round in alternation (cuda::time_interleaved_on_device),
// so that every row is timed in the same power state and their ratios hold
// on a GPU at its power cap (bench/RESULTS.md, session 37). An unfused plan
// with the fused plan's kernels is not timed again: its row repeats the
// fused row's times, with a note. The rows read one device copy of
// `inputs` (DeviceInputs, uploaded once), each writing its own outputs and
// intermediates, poisoned (NaN bytes) before its checked run: the device
// memory of one copy of the inputs plus every row's outputs. Throws
// UserError where that does not fit (the driver's out-of-memory error).
BenchReport bench_gpu(const Graph& graph, const std::vector<Tensor>& inputs,
                      const BenchOptions& options = {});
// Times the program on the CPU executor.
BenchReport bench_cpu(const Graph& graph, const std::vector<Tensor>& inputs,
                      const BenchOptions& options = {});

// The time of one compiled GPU program (median ms), for the tuner.
double time_cuda_program(CudaProgram& program, const std::vector<Tensor>& inputs,
                         const BenchOptions& options);

}  // namespace tilefuse::driver
