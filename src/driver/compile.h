// The driver's compile step: a Graph through every module below it, in the
// order of DESIGN.md's "Data flow":
//
//   build_plan (schedule) -> lower_plan (lower: templates + inline_hooks)
//     -> the named pass table (passes/pipeline.h) on every kernel
//
// One entry point, `compile`, used by the CLI (run / emit / explain) and by
// the tests, so that all of them see the same kernels. The reports that only
// a pass can give (what licm hoisted, how lower_copies copies each operand)
// are kept per kernel for `explain`.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "codegen/cuda/emit.h"
#include "graph/graph.h"
#include "lower/lower.h"
#include "passes/licm.h"
#include "passes/lower_copies.h"
#include "passes/pipeline.h"
#include "schedule/plan.h"
#include "tir/ir.h"
#include "tir/target.h"

namespace tilefuse::driver {

struct CompileOptions {
  PlanKind plan = PlanKind::kFused;
  tir::Target target = tir::Target::cpu();
  // A pass name, "all" (after every pass) or "" (never): the kernels are
  // printed to `dump` after that pass (std::cerr when null). An unknown name
  // is a UserError listing the valid ones (pass_names()).
  std::string dump_after;
  std::ostream* dump = nullptr;
  // Config overrides for the templates (a tuner's choice).
  LowerOptions lower;
  // false: stop after lowering (kernels after inline_hooks only; the reports
  // stay empty). The lowering tests run those kernels as they are.
  bool optimize = true;
  // CUDA: f32 GEMMs may run on TF32 tensor cores (`--allow-tf32`). This or
  // cuda.allow_tf32 turns it on; compile() writes the outcome into both
  // CompiledProgram::allow_tf32 and its cuda.allow_tf32. The CPU executor is
  // exact either way.
  bool allow_tf32 = false;
  // The CUDA backend's switches (`--cuda-option`; tir/target.h).
  tir::CudaOptions cuda;
};

struct CompiledKernel {
  LoweredKernel lowered;      // as lowered (after inline_hooks), with its step, bindings and config
  tir::Kernel kernel;         // after the pass pipeline (the lowered kernel when !optimize)
  passes::LicmReport licm;    // what licm hoisted, in the order it hoisted it
  passes::CopyReport copies;  // lower_copies' decision per copy, in program order
  // For a CUDA target (and optimize): the emitted CUDA C++ and the lowering
  // decisions the emitter made (layouts, stages, gemm family, block size).
  std::optional<codegen::CudaKernel> cuda;
};

struct CompiledProgram {
  // A copy, so that a compiled program stands alone. With symbolic dims it
  // is built at some binding; the kernels serve every binding their
  // specialization covers (lower.specialization), and a run binds the
  // symbols from its inputs (driver/specialize.h).
  Graph graph;
  Specialization specialization;  // CompileOptions::lower.specialization
  Plan plan;
  tir::Target target;
  bool allow_tf32 = false;              // CompileOptions::allow_tf32
  tir::CudaOptions cuda;                // CompileOptions::cuda
  std::vector<CompiledKernel> kernels;  // one per plan step, in step order
};

// The passes compile runs for `target`, in order: the target-independent
// table of passes/pipeline.h, then the CPU's or the CUDA backend's
// (codegen/cuda/passes/passes.h).
std::vector<passes::PassEntry> compile_passes(const tir::Target& target);

// The names --dump-after accepts for `target`, in pipeline order (then "all").
std::vector<std::string> pass_names(const tir::Target& target);

// What the compiler makes of one GEMM config, without NVRTC: the tuner's one
// question to the compiler (the nvFuser canSchedule / heuristics split), in
// place of a copy of the code generator's rules. The plan's kernels are
// compiled for the CUDA target with `config` on every GEMM step; the cost is
// read off their kernel plans (tir/plan.h).
struct ConfigCost {
  bool feasible = false;
  std::string why;               // when not feasible
  int threads = 0;               // per block, of the kernel with the most accumulators
  int mma_threads = 0;           // of those, the threads holding accumulators
  int accumulators = 0;          // accumulator registers a thread (elements; f64 count twice)
  int64_t shared_bytes = 0;      // the most dynamic shared memory of any kernel
  uint64_t fingerprint = 0;      // a hash of the emitted CUDA: equal for equal kernels
  int64_t blocks = 0;            // program instances of the largest GEMM kernel (split-K included)
  bool persistent = false;       // a kernel is persistent (the persistent pass took it)
  int unstaged_epilogues = 0;    // MMA epilogues stored from registers (paired), not staged
  bool pingpong = false;         // a kernel has two consumer teams (the persistent pass took it)
  bool register_a = false;       // a kernel loads A into wgmma fragments (the register_a pass took it)
  bool split_tail = false;       // a kernel's main loop ends in a split tail (the split_tail pass took it)
};
// Not feasible (with why) when a kernel needs more than `max_shared_bytes` of
// dynamic shared memory (0: no limit) or more than `max_accumulators`
// accumulator registers a thread, or the compiler rejects the config.
// `specialization`: what the kernels are compiled for (symbolic dims).
ConfigCost config_cost(const Graph& graph, PlanKind plan, const GemmConfig& config,
                       const tir::Target& target, const tir::CudaOptions& cuda,
                       int64_t max_shared_bytes, int max_accumulators,
                       const Specialization& specialization = {});

// Plans, lowers and optimizes `graph` for options.target. Throws UserError
// for a bad dump_after, InternalError when a module fails on a well-formed
// graph; never runs a kernel.
CompiledProgram compile(const Graph& graph, const CompileOptions& options = {});

// Whether `a` and `b` run the same kernels in the same order: as many, each
// pair the same CUDA source (or, without one, the same printed Tile IR),
// with the same TF32 switch. Two plans of a plain GEMM or a pointwise chain
// (the unfused plan has nothing to split) compile so; bench then times the
// kernels once.
bool same_kernels(const CompiledProgram& a, const CompiledProgram& b);

}  // namespace tilefuse::driver
