// The autotuner (DESIGN.md, "Data flow": tune; issue 5): enumerate plans x
// GEMM configs, compile the candidates in parallel, benchmark them, let the
// library GEMM compete, keep the winner in the tuning cache
// (runtime/cache/tuning_cache.h).
//
//   for plan in (fused, unfused):
//     for config in gemm_config_space(...)        (the same config for every
//       candidate = compile(graph, plan, config)   GEMM step of the plan)
//   compile every candidate on a thread pool: driver::compile, then NVRTC
//     (through the kernel cache) for each distinct kernel source; a
//     candidate that spills is not timed where its plan has one that does
//     not (spill_skips), unless all of those fail to run; the first
//     candidate still runs once, untimed, for the reference outputs
//   time every candidate on the device, one after another (median of
//     `repeats`, L2 flushed; CPU: wall time), re-time each plan's best few
//     with `final_repeats` and check their outputs against the first
//     candidate's (the fused plan's heuristic default: within twice run
//     --check's tolerance, so a wrong kernel never wins); the best config
//     per plan
//   GPU: a third candidate, unfused+cuBLASLt: the unfused plan at its best
//     config with every plain GEMM step run by cuBLASLt instead of our
//     kernel (CudaProgramOptions::cublaslt_gemms; f32 on TF32 only with
//     allow_tf32), timed and checked the same way (first `repeats`, then
//     `final_repeats` and the agreement check). It is a candidate only when
//     the unfused plan ran, has a plain GEMM step (cublaslt_gemm_kernels),
//     libcublasLt loads and cuBLASLt has an algorithm for each such step;
//     otherwise TunedChoice::cublaslt_note says why not
//   the fastest of the three (pick_plan: a plan must beat the ones before it
//     in the order fused, unfused, cuBLASLt by TuneOptions::plan_margin)
//   store {plan, cublaslt, gemm_config, times, tuned_at, tuning_seconds} in
//     the cache
//
// A candidate that fails to compile, load or launch is skipped and counted,
// never fatal (only "every candidate failed" is an error). Because the
// winner's kernels were compiled through the kernel cache, a later `run` of
// the same program with the cached choice compiles nothing.
//
// Cache entry (TuningCache value, keyed by tuning_key()):
//   {"format": "tilefuse-tune-1", "plan": "fused"|"unfused", "cublaslt": bool,
//    "gemm_config": {block_m, block_n, block_k, num_stages, num_warps, group_m} | null,
//    "fused_config": ... | null, "unfused_config": ... | null,
//    "times": {"fused_us", "unfused_us", "cublaslt_us", "candidates": [{plan, config,
//              cublaslt (only when true), median_us, repeats, error, spill_bytes
//              (only when > 0)}]},
//    "cublaslt_note": string,
//    "tuned_at": ISO-8601 UTC, "tuning_seconds", "device", "target"}
// An entry that is missing a field or has a wrong type is a miss (re-tuned
// and replaced), except the cuBLASLt fields: entries written before the
// cuBLASLt candidate existed lack them and still load, as a choice of our
// own kernels whose cuBLASLt time is -1 and whose cublaslt_note says it was
// not measured. Such an entry is still a correct measurement of the two
// plans, so the format (and the key) stays "tilefuse-tune-1"; `--retune`
// lets cuBLASLt compete for it. A "cublaslt": true entry must have plan
// "unfused" and a cuBLASLt time.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "graph/graph.h"
#include "lower/lower.h"
#include "runtime/cache/tuning_cache.h"
#include "schedule/plan.h"
#include "tir/target.h"

namespace tilefuse::driver {

// The machine a tuning is for: part of the cache key, and the limits that
// prune the config space.
struct TuneDevice {
  std::string name = "cpu";                 // "cpu" or the GPU's name ("NVIDIA H200")
  tir::Target target = tir::Target::cpu();  // cpu, or the GPU's CUDA target
  int64_t max_shared_bytes = 0;             // opt-in shared memory per block (CUDA)
  int sm_count = 0;                         // multiprocessors (CUDA; 0: unknown)

  // The tuning cache's device field: "cpu", or "<name> <target>" such as
  // "NVIDIA H200 sm_90a".
  std::string key() const;
};

// The CPU executor.
TuneDevice cpu_tune_device();
// The GPU (default_device(): its name, its target, its opt-in shared memory
// limit). Throws UserError without a usable GPU or for one older than sm_80.
TuneDevice cuda_tune_device();
// The same for GPU `ordinal` (a tuning made on device 0 serves another of
// the same model: the key names the GPU and its target, not the ordinal).
TuneDevice cuda_tune_device(int ordinal);

// The opt-in shared memory per block of a CUDA target when no device can be
// asked: 227 KiB for sm_90+, 163 KiB for sm_80 / sm_87, 99 KiB for the other
// sm_8x; 0 for the CPU.
int64_t default_max_shared_bytes(const tir::Target& target);

// "" when kernel `name` fits `limit` bytes of shared memory a block (0: no
// limit), else "kernel NAME needs N bytes of shared memory; WHO allows
// LIMIT a block" (`who`: the target or "the GPU"), the one message that
// explain, emit, the tuner and a launch give.
std::string shared_memory_excess(const std::string& name, int64_t bytes, int64_t limit,
                                 const std::string& who);

// "128x128x64/3/8": BLOCK_MxBLOCK_NxBLOCK_K/num_stages/num_warps (the format
// of `bench --gemm-config`).
std::string gemm_config_name(const GemmConfig& config);
nlohmann::json gemm_config_to_json(const GemmConfig& config);
// nullopt when `j` is not an object with six positive integer fields.
std::optional<GemmConfig> gemm_config_from_json(const nlohmann::json& j);

// The GEMM configs the tuner tries for `step` (a GEMM step of `graph`) on
// `target`, the heuristic default (default_gemm_config) first.
//
// CUDA: BLOCK_M, BLOCK_N from {64, 128, 256}, each capped at the next power of
// two of its problem dim (at least 16) and deduplicated; tiles at most 2:1
// in aspect; BLOCK_K 32 with 3 or 4 stages and 64 with 2 or 3 stages for
// 16-bit operands (16 with 3/4, 32 with 2/3 for f32/f64), each capped at the
// next power of two of K (at least 16) and stages at the number of K tiles;
// num_warps 4 for tiles of 64x128 elements or fewer, 8 for larger ones,
// both for 128x128; GROUP_M 8. Pruned by asking the compiler
// (compile.h's config_cost for `plan` and `cuda`): the kernels' dynamic
// shared memory above `max_shared_bytes`; more than 128 accumulator
// registers a thread (f64 counting two); a config that compiles to the same
// kernels as one before it (the warps shrunk to the warp tiles the tile
// has). The default is kept even when a rule would drop it (it is what runs
// without tuning).
//
// Bandwidth-bound GEMMs (bandwidth_bound_gemm: K and N at most 256) also
// get tiles that move each gathered row once: BLOCK_N the whole N (next
// power of two, at most 256); BLOCK_M 64, 128 and 256 capped at the
// problem; the whole K in one stage (next power of two, at most 128; two
// stages of 128 past 128) with the warps above and twice them; for BLOCK_M
// up to 128 also the K tiles above (the larger stage count, capped at the K
// tiles) with twice the warps; at least 16 outputs a thread; pruned and
// deduplicated the same way.
//
// Split-K (CUDA): the configs above with fewer output tiles than `sm_count`
// (BLOCK_M x BLOCK_N tiles times the batch), the largest tiles first, at
// most 6, are tried again with split_k S for each S in {2, 3, 4, 6, 8, 12,
// 16} that leaves each split at least 2 K tiles, no split empty, and makes
// tiles * S at most 2 * sm_count blocks (stages capped at a split's K
// tiles). Which wins is measured. None where sm_count is 0 or a size of
// the step is symbolic (gemm_symbolic_dim: split-K needs constant sizes).
//
// Persistent (sm_90a): the unsplit configs above with more output tiles than
// `sm_count`, the largest tiles first, at most 4, are tried again as
// persistent kernels (GemmConfig::persistent), with their stages and with
// one stage fewer; only those the persistent pass takes (warp-specialized,
// constant sizes). None where sm_count is 0 or a size is symbolic.
//
// CPU: the default and up to three square tiles (32, 64, 128) capped at the
// problem, deduplicated.
//
// With a specialization (a graph with symbolic dims), the sizes are its
// size hints (specialization.h) and the default its heuristic config.
std::vector<GemmConfig> gemm_config_space(const Graph& graph, const KernelStep& step,
                                          const tir::Target& target, int64_t max_shared_bytes,
                                          PlanKind plan = PlanKind::kFused,
                                          const tir::CudaOptions& cuda = {}, int sm_count = 132,
                                          const Specialization* specialization = nullptr);

// The SMs that explain assumes for `target`, which has no device to ask:
// the count of the target's usual data-center part (sm_80: an A100's 108;
// sm_86: an A40's 84; sm_90 and sm_90a: an H100 SXM's or an H200's 132),
// else 132. The tuner uses the device's own count (TuneDevice::sm_count).
int assumed_sm_count(const tir::Target& target);

// Why a config splits K (or not): "split-K 4: 32 tiles for 132 SMs, 4 x 32 =
// 128 blocks, 32 of 128 K tiles a block" or "no split-K (256 tiles fill 132 SMs)".
std::string split_k_reason(const GemmConfig& config, const KernelStep& step, int sm_count = 132);

// Why a stream-K config (GemmConfig::stream_k > 0) shares out K: the waves
// its tiles would take on `sm_count` SMs and its StreamKSchedule.
std::string stream_k_reason(const GemmConfig& config, const KernelStep& step, int sm_count = 132);

// True when K and N are both at most 256 (issue 12: sparse convolution, GNN
// messages, embedding bags): such a GEMM does at most 2*256 flops a byte of
// a gathered 16-bit row and is bound by memory, not the tensor cores.
bool bandwidth_bound_gemm(const GemmGeometry& g);

// The GEMM step the space is built for: the plan's largest GEMM (by
// batch*M*N*K), or nullptr when it has none.
const KernelStep* largest_gemm_step(const Plan& plan);

// TuneOptions::plan_margin's default.
inline constexpr double kDefaultPlanMargin = 0.01;

struct TuneOptions {
  TuneDevice device;    // where to tune (cpu_tune_device() by default)
  bool retune = false;  // ignore a cached choice (the new one replaces it)
  // CUDA: compile every candidate with f32 GEMMs on TF32 tensor cores
  // (CompileOptions::allow_tf32). A tuning of its own: part of the cache key,
  // and outputs of f32 GEMMs agree within twice kTf32Tolerance.
  bool allow_tf32 = false;
  // The CUDA backend's switches every candidate compiles with (a tuning of
  // its own when they differ from the defaults: part of the cache key).
  tir::CudaOptions cuda;
  // Read and write the tuning cache (default_tuning_cache(); with caching
  // disabled by TILEFUSE_NO_CACHE there is none, and every call searches).
  bool use_cache = true;
  int threads = 0;          // compile threads; 0: the CPUs the process may run on
  int warmup = 3;           // per candidate, untimed
  int repeats = 20;         // per candidate, timed (the median counts)
  int finalists = 3;        // per plan, the best few re-timed ...
  int final_repeats = 100;  // ... with this many repeats (GPU only)
  // GPU: then the plans' winners (fused, unfused, unfused+cuBLASLt) are timed
  // again in alternation, final_repeats rounds (cuda::time_interleaved_on_device):
  // the plan is chosen between times taken in the same power state. The
  // plans read one device copy of the inputs (DeviceInputs).
  bool plan_runoff = true;
  // How much faster (a fraction of its time) the unfused plan must be than
  // the fused one to be chosen, and unfused+cuBLASLt than the better of our
  // two (pick_plan). The fused plan writes and reads back no intermediate
  // (64 MiB of HBM and a launch at moe_up_proj) and the unfused plan needs
  // no libcublasLt, so a difference the timer cannot resolve should not give
  // them up: two final timings of one moe_up_proj kernel differ by up to
  // ~0.5%, and the tuner once chose unfused there at 0.2% (bench/RESULTS.md,
  // session 27). 0: the fastest median wins.
  double plan_margin = kDefaultPlanMargin;
  // GPU: the untimed runs (ms) before a candidate's timed ones
  // (cuda::TimingOptions::warmup_ms, which brings an idle GPU's clocks up).
  // The candidates run back to back, so the GPU is busy from the one before:
  // each gets `warmup_ms`; the first timed candidate and the re-timings
  // (final_repeats: each finalist's, unfused+cuBLASLt's) get
  // `final_warmup_ms`, what bench gives a row. At 100 ms each, 120
  // candidates spent 12 s of the seed's 31.7 s cold tuning warming up
  // (bench/RESULTS.md, session 28).
  double warmup_ms = 10;
  double final_warmup_ms = 100;
  bool flush_l2 = true;     // flush the L2 (host caches on the CPU) before each timed run
  int cpu_threads = 0;      // CPU executor threads (0: all)
  // What the candidates are compiled for: a graph with symbolic dims is
  // tuned for the inputs' binding, and kept per size bucket (its size_hints;
  // tuning_key).
  Specialization specialization;
  // The cache root (the tuning and kernel caches under it); "" for
  // default_cache_root().
  std::string cache_root;
  // A `\r`-updated line on stderr while tuning runs past 1 s, when stderr is
  // a terminal: "tuning NAME: 12/36 candidates, best 41.2 us (fused 128x128x64/3/8)".
  bool progress = true;
  std::string name = "program";  // NAME in the progress line
};

// One candidate: a plan with one GEMM config.
struct TuneCandidate {
  PlanKind plan = PlanKind::kFused;
  std::optional<GemmConfig> config;  // nullopt: the plan has no GEMM step
  double median_us = -1;             // -1: not timed (failed)
  int repeats = 0;                   // samples behind median_us
  std::string error;                 // why it was skipped; empty when timed
  // ptxas -v (GPU): bytes spilled to local memory, stores plus loads, over
  // its kernels (0 also where ptxas gave no report).
  int spill_bytes = 0;
  // The unfused+cuBLASLt candidate (plan kUnfused): its plain GEMM steps on
  // cuBLASLt, `config` that of its other kernels.
  bool cublaslt = false;
};

// The tuner's rule on spills (issue 15: no candidate that can win spills):
// a candidate of ours whose kernels spill (TuneCandidate::spill_bytes > 0)
// is not timed when another candidate of the same plan compiled without
// spilling (no error and no spill bytes); where every compiled candidate of
// a plan spills, they all run. Returns, for each of `candidates`, the reason
// it is skipped ("ptxas spills N bytes to local memory; ...") or "" (also
// for one already skipped, with an error). tune() runs a skipped candidate
// after all when every one of its plan that did not spill failed to run,
// and runs the first candidate once, untimed, for the agreement reference
// when that one is skipped.
std::vector<std::string> spill_skips(const std::vector<TuneCandidate>& candidates);

// The order the tuner compiles its distinct kernel sources in, by NVRTC on
// every usable CPU: indices into `slow` (one flag a source: a register_a
// candidate's kernel, whose K loop is unrolled whole and takes NVRTC 4-40x
// as long; bench/RESULTS.md, session 27), the slow ones first, each group
// in its given order. A longest-first schedule: the slow kernels compile
// beside the many quick ones rather than after them, alone.
std::vector<size_t> nvrtc_compile_order(const std::vector<bool>& slow);

// The plan that wins given each one's measured time (-1: not measured or
// failed), in the order of preference fused, unfused, unfused+cuBLASLt: a
// plan later in that order wins only when it is faster than the best before
// it by more than `margin` (a fraction of that best's time; 0: strictly
// faster). So ties, and with a margin differences inside the timer's noise,
// go to our kernels, fused first (TuneOptions::plan_margin says why).
// nullopt when none has a time.
struct PlanPick {
  PlanKind plan = PlanKind::kFused;
  bool cublaslt = false;  // unfused+cuBLASLt (plan is then kUnfused)
};
std::optional<PlanPick> pick_plan(double fused_us, double unfused_us, double cublaslt_us = -1,
                                  double margin = 0);

// What a tuning decided (stored in, or read from, the tuning cache).
struct TunedChoice {
  PlanKind plan = PlanKind::kFused;  // the fastest plan
  // With plan kUnfused: unfused+cuBLASLt won, so run the unfused plan with
  // CudaProgramOptions::cublaslt_gemms (its other kernels at unfused_config).
  // An explicit --plan unfused still runs our kernels.
  bool cublaslt = false;
  std::optional<GemmConfig> gemm_config;   // its best config (nullopt: no GEMM step)
  std::optional<GemmConfig> fused_config;  // the best config of each plan
  std::optional<GemmConfig> unfused_config;
  double fused_us = -1, unfused_us = -1;  // each plan's best median; -1: no candidate ran
  double cublaslt_us = -1;                // unfused+cuBLASLt's; -1: not a candidate, or failed
  // Why unfused+cuBLASLt has no time ("cuBLASLt unavailable: ...", "no
  // plain GEMM step ...", its run error or disagreement); "" when it has one.
  std::string cublaslt_note;
  // The unfused plan has the fused plan's steps (a program with nothing to
  // fuse, e.g. a plain GEMM): its candidates would compile to the same
  // kernels, so they are not built or timed again; unfused_us and
  // unfused_config are the fused plan's, and unfused+cuBLASLt runs the
  // fused winner's program.
  bool unfused_same_as_fused = false;
  // The plans' times (fused_us, unfused_us, cublaslt_us) come from the plan
  // runoff (TuneOptions::plan_runoff): their winners timed in alternation;
  // the candidates keep their finals' times. Not cached (a cached choice's
  // times are as they were measured).
  bool plan_runoff = false;
  std::vector<TuneCandidate> candidates;  // every candidate tried, in search order
  std::string tuned_at;                   // ISO-8601 UTC
  double tuning_seconds = 0;
  std::string device;  // TuneDevice::key()

  // The config overrides for `plan` (its tuned config; the heuristic's when
  // none).
  LowerOptions lower_for(PlanKind plan) const;
  // "fused, 128x128x64/3/8, 38.1 us vs unfused 52.0 us", with
  // ", unfused+cuBLASLt 41.7 us" when that was measured; when it won,
  // "unfused+cuBLASLt, 41.7 us vs fused 53.3 us, unfused 64.8 us".
  std::string summary() const;
};

struct TuneResult {
  TunedChoice choice;
  bool from_cache = false;  // the cached choice: nothing was compiled or timed
  bool cache_written = false;
  int candidates = 0;        // tried (both plans, and unfused+cuBLASLt when it was one)
  int failed = 0;            // skipped: failed to compile, load or launch, or spilled
  int spilled = 0;           // ... of which spilled (spill_skips)
  int nvrtc_kernels = 0;     // distinct kernel sources compiled (NVRTC or the kernel cache)
  int nvrtc_cache_hits = 0;  // ... of which came from the kernel cache
  double seconds = 0;        // wall time of this call
  // Where a search's wall time went, in seconds (0 for a cached choice):
  double compile_seconds = 0;        // the passes and the emitter, every candidate in parallel
  double nvrtc_seconds = 0;          // NVRTC (or the kernel cache), every kernel in parallel ...
  double nvrtc_longest_seconds = 0;  // ... of which the slowest single kernel
  double timing_seconds = 0;         // loading and timing the candidates, finalists and cuBLASLt
};

// "passes 0.4 s, NVRTC 14.2 s (slowest kernel 12.9 s), timing 8.1 s": where
// a search's time went (TuneResult's phases), with ", the plans' winners
// then in alternation" after a plan runoff (TunedChoice::plan_runoff).
std::string tune_phases(const TuneResult& result);

// The tuning cache key of `graph` on `device`: the canonical program text
// (Graph::to_string), the parameters' shapes and dtypes, device.key(), the
// tilefuse version and the entry format (followed by " allow_tf32" for a
// tuning with TuneOptions::allow_tf32, and by the CUDA options that differ
// from the defaults, tir::CudaOptions::key()). With symbolic dims, a tuning
// is per size bucket: `buckets` (one per symbol, size_bucket of its value)
// stand for the symbols in the shapes and follow in `extra` (" buckets T=2048").
cache::TuningKey tuning_key(const Graph& graph, const TuneDevice& device,
                            bool allow_tf32 = false, const tir::CudaOptions& cuda = {},
                            const std::vector<int64_t>& buckets = {});

// Parses a cached value; nullopt when anything is missing or malformed.
std::optional<TunedChoice> choice_from_json(const nlohmann::json& value);
nlohmann::json choice_to_json(const TunedChoice& choice);

// The cached choice for `graph` on `device`, or nullopt (no entry, a corrupt
// one, or caching disabled).
std::optional<TunedChoice> cached_choice(const Graph& graph, const TuneDevice& device,
                                         bool allow_tf32 = false,
                                         const tir::CudaOptions& cuda = {},
                                         const std::vector<int64_t>& buckets = {},
                                         const std::string& cache_root = "");

// Tunes `graph` on options.device with `inputs` (one per parameter) as
// described at the top of this file; with a cached choice (and neither
// retune nor !use_cache) returns it at once (from_cache). Throws UserError
// when no candidate compiles and runs: the first run failure's own message
// when some compiled (so a device-side check, such as an index out of range,
// reads as it does without tuning), else one quoting the first compile
// error; and for a CUDA device without a GPU. Nothing is cached then.
TuneResult tune(const Graph& graph, const std::vector<Tensor>& inputs,
                const TuneOptions& options = {});

// What `explain` says about tuning, from the cache:
//   {"tuned": false}  or
//   {"tuned": true, "device", "plan", "cublaslt" (unfused+cuBLASLt won),
//    "gemm_config" (object, or null), "config" ("128x128x64/3/8", or null),
//    "fused_us", "unfused_us", "cublaslt_us", "cublaslt_note",
//    "speedup" (the runner-up's time / the winner's; null when no other
//    plan has a time), "config_runner_up" ({"config", "median_us"}: the
//    winning plan's fastest other config; null for unfused+cuBLASLt or
//    when none other ran), "candidates" (how many were tried), "failed",
//    "tuned_at", "tuning_seconds"}.
// `device` is a TuneDevice::key() ("NVIDIA H200 sm_90a"), a target name
// ("sm_90a": the newest tuning of the program on any GPU of that target,
// found by reading the cache directory, so explain needs no GPU), or "" (the
// newest tuning on any device).
// With allow_tf32, the tunings made with TuneOptions::allow_tf32.
// With symbolic dims, the tuning of the size bucket `buckets`; without
// buckets, {"tuned": false, "note": ...} saying tunings are per bucket.
nlohmann::json tuning_account(const Graph& graph, const std::string& device,
                              bool allow_tf32 = false, const std::vector<int64_t>& buckets = {});

// tuning_account's object as one line for `explain`'s text:
//   "tuning (NVIDIA H200 sm_90a, 2026-11-30T05:00:00Z): fused 128x128x64/3/8 won,
//    38.1 us vs unfused 52.0 us, unfused+cuBLASLt 41.7 us (1.09x faster); 57 candidates
//    (0 skipped) in 4.2 s"
// (unfused+cuBLASLt as the winner: "unfused+cuBLASLt won, 41.7 us vs fused ...";
// without its time, after the count: "...; unfused+cuBLASLt <cublaslt_note>")
// or "tuning: none cached (run tilefuse run or bench on the GPU to tune)".
std::string render_tuning_text(const nlohmann::json& account);

}  // namespace tilefuse::driver
