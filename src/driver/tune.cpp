#include "driver/tune.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <limits>
#include <optional>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>

#include "codegen/cuda/passes/register_a.h"
#include "codegen/cuda/passes/split_tail.h"
#include "core/error.h"
#include "core/text.h"
#include "driver/bench.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "driver/execute.h"
#include "reference/eval.h"
#include "runtime/cache/kernel_cache.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/timing.h"
#include "schedule/schedule.h"

namespace tilefuse::driver {
namespace {

using json = nlohmann::json;

constexpr const char* kFormat = "tilefuse-tune-1";


// A tile edge of at most `v`, no larger than the next power of two of `dim`
// (at least 16).
int cap_tile(int64_t dim, int v) {
  return static_cast<int>(std::min<int64_t>(v, std::max<int64_t>(16, next_pow2(dim))));
}

// Whether plans `a` and `b` of `graph` have the same steps and
// materialized values (their kinds and decision notes aside): then every
// config compiles both to the same kernels (schedule/plan.h's text form
// compared, which prints every step's nodes, operands and reads).
bool same_steps(const Graph& graph, const Plan& a, const Plan& b) {
  Plan b_as_a = b;
  b_as_a.kind = a.kind;
  b_as_a.decisions = a.decisions;
  return to_string(graph, a) == to_string(graph, b_as_a);
}

bool same_config(const GemmConfig& a, const GemmConfig& b) {
  return a.block_m == b.block_m && a.block_n == b.block_n && a.block_k == b.block_k &&
         a.num_stages == b.num_stages && a.num_warps == b.num_warps && a.group_m == b.group_m &&
         a.split_k == b.split_k && a.stream_k == b.stream_k && a.persistent == b.persistent &&
         a.pingpong == b.pingpong && a.register_a == b.register_a &&
         a.register_a_l2_prefetch == b.register_a_l2_prefetch && a.split_tail == b.split_tail;
}

// The CPUs this process may run on (sched_getaffinity; a container limited
// to 16 of a larger host's cores gets 16), else hardware_concurrency.
int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::string iso_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs f(0..n-1) on up to `threads` threads (the caller's among them). f
// must not throw.
template <class F>
void parallel_for(size_t n, int threads, F f) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) f(i);
  };
  const size_t count = std::min<size_t>(n, static_cast<size_t>(std::max(1, threads)));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < count; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

// The progress line: shown once tuning has run for 1 s, when stderr is a
// terminal; rewritten in place with `\r`, erased at the end.
class Progress {
 public:
  explicit Progress(bool enabled)
      : enabled_(enabled && isatty(STDERR_FILENO) == 1), t0_(std::chrono::steady_clock::now()) {}
  ~Progress() { finish(); }
  void show(const std::string& text) {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (seconds_since(t0_) < 1.0) return;
    std::fprintf(stderr, "\r%s\x1b[K", text.c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  void finish() {
    std::lock_guard<std::mutex> lock(mu_);
    if (shown_) std::fprintf(stderr, "\r\x1b[K");
    std::fflush(stderr);
    shown_ = false;
  }

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point t0_;
  std::mutex mu_;
  bool shown_ = false;
};

std::string candidate_name(const TuneCandidate& c) {
  if (c.cublaslt) return "unfused+cuBLASLt";
  return fmt::format("{} {}", plan_kind_name(c.plan),
                     c.config ? gemm_config_name(*c.config) : std::string("default"));
}

json candidate_to_json(const TuneCandidate& c) {
  json j = {{"plan", std::string(plan_kind_name(c.plan))},
            {"config", c.config ? gemm_config_to_json(*c.config) : json(nullptr)},
            {"median_us", c.median_us},
            {"repeats", c.repeats}};
  if (c.cublaslt) j["cublaslt"] = true;
  if (!c.error.empty()) j["error"] = c.error;
  if (c.spill_bytes > 0) j["spill_bytes"] = c.spill_bytes;
  return j;
}

std::optional<PlanKind> plan_from_json(const json& j) {
  if (!j.is_string()) return std::nullopt;
  if (j == "fused") return PlanKind::kFused;
  if (j == "unfused") return PlanKind::kUnfused;
  return std::nullopt;
}

// A config field that may be null: true when valid (and `out` set).
bool optional_config(const json& j, const char* key, std::optional<GemmConfig>& out) {
  auto it = j.find(key);
  if (it == j.end()) return false;
  if (it->is_null()) {
    out.reset();
    return true;
  }
  out = gemm_config_from_json(*it);
  return out.has_value();
}

// Optional fields of a cache entry: absent, `out` stays as it is (true);
// present, a string (an integer in [0, INT32_MAX]) or false, which makes the
// entry a miss (json::value would throw on another type: an internal error).
bool optional_string(const json& j, const char* key, std::string& out) {
  auto it = j.find(key);
  if (it == j.end()) return true;
  if (!it->is_string()) return false;
  out = it->get<std::string>();
  return true;
}
bool optional_count(const json& j, const char* key, int& out) {
  auto it = j.find(key);
  if (it == j.end()) return true;
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > INT32_MAX)
    return false;
  out = static_cast<int>(it->get<int64_t>());
  return true;
}

// The start of the reason a candidate was not timed for its spills
// (spill_skips), which tuning_account counts by.
constexpr std::string_view kSpillSkip = "ptxas spills";

// One step of a candidate's compile: a distinct kernel source.
struct Source {
  const std::string* source = nullptr;
  const std::string* name = nullptr;
  std::string error;
  bool from_cache = false;
  int spill_bytes = 0;  // ptxas -v: spill stores + loads (0: none or no report)
  double seconds = 0;   // NVRTC or the kernel cache, wall
};

struct Slot {
  TuneCandidate cand;
  // Shared: the unfused+cuBLASLt candidate runs the unfused winner's program.
  std::shared_ptr<CompiledProgram> compiled;
  std::vector<size_t> sources;  // indices into the distinct sources
  // Not timed for its spills (spill_skips), unless every candidate of its
  // plan that did not spill fails to run; it still runs once, untimed, when
  // it comes first (the agreement reference).
  bool spill_skipped = false;
};

// ||out - ref|| / ||ref||, the worst over the outputs (NaN or inf: inf).
double max_output_error(const std::vector<Tensor>& outs, const std::vector<Tensor>& refs) {
  if (outs.size() != refs.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    const double e = relative_error(outs[i], refs[i]);
    if (!(e <= worst)) worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
  }
  return worst;
}

// How far two configs' outputs may differ: twice `run --check`'s tolerance
// of the output dtype (each may be that far from the exact result; only the
// summation order differs), exact for integers.
// With allow_tf32 an f32 output may come from a TF32 GEMM (kTf32Tolerance).
double agreement_tolerance(const std::vector<Tensor>& outs, bool allow_tf32) {
  double tol = 1e9;
  for (const Tensor& t : outs) {
    double one = check_tolerance(t.dtype());
    if (allow_tf32 && t.dtype() == DType::F32) one = std::max(one, kTf32Tolerance);
    tol = std::min(tol, 2 * one);
  }
  return tol;
}

}  // namespace

std::string TuneDevice::key() const {
  return target.is_cuda() ? name + " " + target.name() : std::string("cpu");
}

TuneDevice cpu_tune_device() {
  return TuneDevice{};
}

TuneDevice cuda_tune_device() {
  return cuda_tune_device(0);
}

TuneDevice cuda_tune_device(int ordinal) {
  cuda::Device& dev = cuda_device(ordinal);
  std::optional<tir::Target> t = tir::Target::parse(dev.arch());
  if (!t)
    throw UserError(
        fmt::format("the GPU {} is {}; tilefuse needs sm_80 or newer", dev.name(), dev.arch()));
  TuneDevice d;
  d.name = dev.name();
  d.target = *t;
  d.max_shared_bytes = dev.max_shared_per_block_optin();
  d.sm_count = dev.sm_count();
  return d;
}

std::string shared_memory_excess(const std::string& name, int64_t bytes, int64_t limit,
                                 const std::string& who) {
  if (limit <= 0 || bytes <= limit) return "";
  return fmt::format("kernel {} needs {} bytes of shared memory; {} allows {} a block", name,
                     bytes, who, limit);
}

int64_t default_max_shared_bytes(const tir::Target& target) {
  if (!target.is_cuda()) return 0;
  if (target.sm >= 90) return 227 * 1024;
  if (target.sm == 80 || target.sm == 87) return 163 * 1024;
  return 99 * 1024;
}

std::string gemm_config_name(const GemmConfig& c) {
  // (stream-K implies persistent: "/streamkU" alone)
  return fmt::format("{}x{}x{}/{}/{}{}{}{}{}", c.block_m, c.block_n, c.block_k, c.num_stages,
                     c.num_warps,
                     c.stream_k > 0  ? fmt::format("/streamk{}", c.stream_k)
                     : c.split_k > 1 ? fmt::format("/splitk{}", c.split_k)
                                     : "",
                     c.pingpong                        ? "/pingpong"
                     : c.persistent && c.stream_k == 0 ? "/persistent"
                                                       : "",
                     !c.register_a                     ? ""
                     : c.register_a_l2_prefetch == 256 ? "/ra256"
                                                       : "/ra",
                     c.split_tail > 0 ? fmt::format("/tail{}", c.split_tail) : "");
}

json gemm_config_to_json(const GemmConfig& c) {
  json j = {{"block_m", c.block_m},       {"block_n", c.block_n},     {"block_k", c.block_k},
            {"num_stages", c.num_stages}, {"num_warps", c.num_warps}, {"group_m", c.group_m}};
  if (c.split_k > 1) j["split_k"] = c.split_k;  // (absent: 1, as entries before split-K)
  if (c.persistent) j["persistent"] = true;     // (absent: false, likewise)
  if (c.stream_k > 0) j["stream_k"] = c.stream_k;
  if (c.pingpong) j["pingpong"] = true;
  if (c.register_a) j["register_a"] = true;
  if (c.register_a && c.register_a_l2_prefetch)
    j["register_a_l2_prefetch"] = c.register_a_l2_prefetch;
  if (c.split_tail > 0) j["split_tail"] = c.split_tail;
  return j;
}

std::optional<GemmConfig> gemm_config_from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  GemmConfig c;
  const std::pair<const char*, int*> fields[] = {
      {"block_m", &c.block_m},       {"block_n", &c.block_n},     {"block_k", &c.block_k},
      {"num_stages", &c.num_stages}, {"num_warps", &c.num_warps}, {"group_m", &c.group_m}};
  for (auto [key, dst] : fields) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return std::nullopt;
    const int64_t v = it->get<int64_t>();
    if (v < 1 || v > 4096) return std::nullopt;
    *dst = static_cast<int>(v);
  }
  if (auto it = j.find("split_k"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > 64)
      return std::nullopt;
    c.split_k = static_cast<int>(it->get<int64_t>());
  }
  if (auto it = j.find("stream_k"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 4096 ||
        c.split_k > 1)
      return std::nullopt;
    c.stream_k = static_cast<int>(it->get<int64_t>());
  }
  if (auto it = j.find("persistent"); it != j.end()) {
    if (!it->is_boolean()) return std::nullopt;
    c.persistent = it->get<bool>();
  }
  if (auto it = j.find("pingpong"); it != j.end()) {
    if (!it->is_boolean()) return std::nullopt;
    c.pingpong = it->get<bool>();
    if (c.pingpong && !c.persistent) return std::nullopt;
  }
  if (auto it = j.find("register_a"); it != j.end()) {
    if (!it->is_boolean()) return std::nullopt;
    c.register_a = it->get<bool>();
  }
  if (auto it = j.find("register_a_l2_prefetch"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() != 256 || !c.register_a) return std::nullopt;
    c.register_a_l2_prefetch = 256;
  }
  if (auto it = j.find("split_tail"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > 64)
      return std::nullopt;
    c.split_tail = static_cast<int>(it->get<int64_t>());
  }
  return c;
}

const KernelStep* largest_gemm_step(const Plan& plan) {
  const KernelStep* best = nullptr;
  double best_work = -1;
  for (const KernelStep& s : plan.steps) {
    if (s.kind != StepKind::kGemm) continue;
    const double work = static_cast<double>(shape_numel(s.gemm.batch)) * s.gemm.m * s.gemm.n *
                        static_cast<double>(s.gemm.k);
    if (work > best_work) best_work = work, best = &s;
  }
  return best;
}

namespace {
// Output tiles of `step` under `c` (the batch included).
int64_t output_tiles(const KernelStep& step, const GemmConfig& c) {
  const GemmGeometry& g = step.gemm;
  return std::max<int64_t>(1, shape_numel(g.batch)) * ((g.m + c.block_m - 1) / c.block_m) *
         ((g.n + c.block_n - 1) / c.block_n);
}
int64_t k_tiles_of(const KernelStep& step, const GemmConfig& c) {
  return std::max<int64_t>(1, (step.gemm.k + c.block_k - 1) / c.block_k);
}
}  // namespace

std::string split_k_reason(const GemmConfig& c, const KernelStep& step, int sm_count) {
  const GemmGeometry& g = step.gemm;
  bool symbolic = g.m_symbol != kFixedDim || g.n_symbol != kFixedDim || g.k_symbol != kFixedDim;
  for (SymbolId s : g.batch_symbols) symbolic = symbolic || s != kFixedDim;
  if (symbolic) return "no split-K: the GEMM has a symbolic size (split-K needs constant ones)";
  const int64_t tiles = output_tiles(step, c), k_tiles = k_tiles_of(step, c);
  if (c.split_k <= 1)
    return sm_count > 0 && tiles < sm_count
               ? fmt::format(
                     "no split-K: {} tiles for {} SMs, each walks all {} K tiles (the "
                     "split configs measured slower or were not tried)",
                     tiles, sm_count, k_tiles)
               : fmt::format("no split-K: {} tiles fill {} SMs", tiles, sm_count);
  const int64_t per = (k_tiles + c.split_k - 1) / c.split_k;
  return fmt::format(
      "split-K {}: {} tiles for {} SMs, so K is split over {} blocks a tile ({} blocks, {} of {} "
      "K tiles each); the partial f32 tiles go to a workspace and the last block of each tile "
      "sums them in split order and runs the epilogue once",
      c.split_k, tiles, sm_count, c.split_k, tiles * c.split_k, per, k_tiles);
}

std::vector<GemmConfig> gemm_config_space(const Graph& graph, const KernelStep& step_in,
                                          const tir::Target& target, int64_t max_shared_bytes,
                                          PlanKind plan, const tir::CudaOptions& cuda, int sm_count,
                                          const Specialization* specialization) {
  const Specialization spec = specialization ? *specialization : Specialization{};
  const DimEnv env(graph, spec);
  const GemmConfig def = default_gemm_config(env, step_in, target.has_wgmma());
  // The sizes the space is capped at: symbolic dims at their hints.
  KernelStep step = step_in;
  step.gemm.m = env.hint(step.gemm.m, step.gemm.m_symbol);
  step.gemm.n = env.hint(step.gemm.n, step.gemm.n_symbol);
  step.gemm.k = env.hint(step.gemm.k, step.gemm.k_symbol);
  std::vector<GemmConfig> out{def};
  auto add = [&](const GemmConfig& c) {
    for (const GemmConfig& o : out)
      if (same_config(o, c)) return false;
    out.push_back(c);
    return true;
  };
  const GemmGeometry& g = step.gemm;
  if (!target.is_cuda()) {
    for (int t : {32, 64, 128}) {
      GemmConfig c = def;
      c.block_m = cap_tile(g.m, t);
      c.block_n = cap_tile(g.n, t);
      add(c);
    }
    if (out.size() > 4) out.resize(4);
    return out;
  }
  const DType dt = graph.node(step.a.operand).dtype;
  const int elem = static_cast<int>(dtype_size(dt));
  std::vector<int> bms, bns;
  // (Powers of two only. BLOCK_N 192, wgmma m64n192, measured slower on an
  // H100 wherever tried: gather_heavy 25%, the N tiles a third empty;
  // moe_up_proj 1-5% and the 8192^3 GEMM 1-3%, its better wave
  // quantization not paying for the smaller tile; bench/RESULTS.md,
  // session 36.)
  for (int v : {64, 128, 256}) {
    int m = cap_tile(g.m, v), n = cap_tile(g.n, v);
    if (std::find(bms.begin(), bms.end(), m) == bms.end()) bms.push_back(m);
    if (std::find(bns.begin(), bns.end(), n) == bns.end()) bns.push_back(n);
  }
  // Small M on sm_90a (issue 12, item 2): a 64-row tile too, the wgmma m64
  // with the rows past M masked (zero-filled, never stored), next to the
  // mma.sync tile of M's size. Measured on the H200: decode_m32 (M = 32)
  // 36.7 us at 64x128x64/6/4 against 39.5 at 32x128x64/3/4/splitk3
  // (bench/RESULTS.md, session 8).
  if (target.has_wgmma() && (dt == DType::F16 || dt == DType::BF16) && g.m < 64 &&
      std::find(bms.begin(), bms.end(), 64) == bms.end())
    bms.push_back(64);
  // (BLOCK_K, stages): the same 2-4 K tiles in flight either way.
  const int small_k = elem <= 2 ? 32 : 16;
  // On sm_90a BLOCK_K 64 feeds wgmma, whose loop keeps one MMA group in
  // flight from 4 stages on: 4 stages are worth a try.
  const bool wgmma = target.has_wgmma() && (dt == DType::F16 || dt == DType::BF16);
  const std::pair<int, std::vector<int>> k_options[] = {
      {small_k, {3, 4}}, {2 * small_k, wgmma ? std::vector<int>{2, 3, 4} : std::vector<int>{2, 3}}};
  // Whether a config fits and which kernel it makes is the compiler's
  // answer (config_cost): over its shared memory or accumulator budget it is
  // dropped, and a config that compiles to the same kernels as an earlier
  // one (the warps shrunk to the warp tiles the tile has) is a duplicate.
  const int acc_limit = 128;  // accumulator registers a thread (f64: two each)
  std::set<uint64_t> kernels;
  kernels.insert(config_cost(graph, plan, def, target, cuda, 0, INT32_MAX, spec).fingerprint);
  for (int bm : bms) {
    for (int bn : bns) {
      if (std::max(bm, bn) > 2 * std::min(bm, bn)) continue;  // at most 2:1
      std::vector<int> warp_options;
      if (bm * bn == 128 * 128)
        warp_options = {4, 8};
      else
        warp_options = {bm * bn <= 64 * 128 ? 4 : 8};
      for (int warps : warp_options) {
        for (const auto& [bk0, stage_list] : k_options) {
          const int bk = cap_tile(g.k, bk0);
          const int64_t k_tiles = std::max<int64_t>(1, (g.k + bk - 1) / bk);
          for (int s : stage_list) {
            GemmConfig c;
            c.block_m = bm, c.block_n = bn, c.block_k = bk;
            c.num_stages = static_cast<int>(std::min<int64_t>(s, k_tiles));
            c.num_warps = warps;
            c.group_m = 8;
            bool known = false;
            for (const GemmConfig& o : out) known = known || same_config(o, c);
            if (known) continue;
            const ConfigCost cost =
                config_cost(graph, plan, c, target, cuda, max_shared_bytes, acc_limit, spec);
            if (!cost.feasible || !kernels.insert(cost.fingerprint).second) continue;
            add(c);
          }
        }
      }
    }
  }
  // Bandwidth-bound GEMMs (issue 12, item 3): with K and N of at most 256 a
  // gathered row of K elements feeds at most 256 outputs, so the bytes, not
  // the tensor cores, bound the kernel (pointcloud_gather: 1M rows, K = 96,
  // N = 128; ncu on the H200 found no unit busier than 60% in the tuned
  // kernel: latency, too little in flight). Tiles that move each gathered
  // row once and keep more in flight: the whole N in one tile (no row
  // gathered twice); BLOCK_M 64 to 256; the whole K in one stage (BLOCK_K =
  // K rounded up to a power of two, at most 128; past 128 two stages of
  // 128); twice the warps of the rule above (more of each block's loads and
  // stores in flight). The compiler prunes them like the others; the
  // tuner's timing decides.
  if (bandwidth_bound_gemm(g)) {
    const int bn = cap_tile(g.n, 256);
    const int whole_k = cap_tile(g.k, 128);
    const int whole_k_stages = static_cast<int>((g.k + whole_k - 1) / whole_k);
    auto try_add = [&](int bm, int bk, int stages, int warps) {
      if (bm * bn / (warps * 32) < 16) return;  // at least 16 outputs a thread
      GemmConfig c;
      c.block_m = bm, c.block_n = bn, c.block_k = bk;
      c.num_stages = stages;
      c.num_warps = warps;
      c.group_m = 8;
      for (const GemmConfig& o : out)
        if (same_config(o, c)) return;
      const ConfigCost cost =
          config_cost(graph, plan, c, target, cuda, max_shared_bytes, acc_limit);
      if (!cost.feasible || !kernels.insert(cost.fingerprint).second) return;
      add(c);
    };
    for (int bm0 : {64, 128, 256}) {
      const int bm = cap_tile(g.m, bm0);
      const int warps = bm * bn <= 64 * 128 ? 4 : 8;  // the rule above
      // The whole K in one stage.
      for (int w : {warps, 2 * warps}) try_add(bm, whole_k, whole_k_stages, w);
      // The K tiles above with twice the warps.
      if (bm0 > 128) continue;
      for (const auto& [bk0, stage_list] : k_options) {
        const int bk = cap_tile(g.k, bk0);
        const int64_t k_tiles = std::max<int64_t>(1, (g.k + bk - 1) / bk);
        try_add(bm, bk, static_cast<int>(std::min<int64_t>(stage_list.front() + 1, k_tiles)),
                2 * warps);
      }
    }
  }
  // Split-K for configs that leave SMs idle: the largest tiles first (the
  // fewest operand bytes a FLOP; a split restores the blocks they lose), at
  // most 6 of them, each split so that every split has at least 2 K tiles,
  // none is empty, and the blocks stay within two waves. Split-K needs
  // constant sizes (its workspace and counters are sized at compile time):
  // none for a GEMM with a symbolic dim.
  if (sm_count > 0 && gemm_symbolic_dim(graph, step_in).empty()) {
    // (One base a tile shape: the first of its configs, stages aside; the
    // deep rings below cover the stages.)
    std::vector<GemmConfig> base;
    for (const GemmConfig& c : out) {
      bool shape_known = false;
      for (const GemmConfig& b : base)
        shape_known = shape_known || (b.block_m == c.block_m && b.block_n == c.block_n &&
                                      b.block_k == c.block_k && b.num_warps == c.num_warps);
      if (output_tiles(step, c) < sm_count && !shape_known) base.push_back(c);
    }
    std::stable_sort(base.begin(), base.end(), [](const GemmConfig& a, const GemmConfig& b) {
      return a.block_m * a.block_n > b.block_m * b.block_n;
    });
    if (base.size() > 6) base.resize(6);
    // Each also with a deep ring (8 stages, else 6, else 5, within its K
    // tiles and the shared memory): with few tiles a block's stages are all
    // the bytes its SM has in flight. Measured on the H200 (bench/RESULTS.md,
    // sessions 8 and 10): decode_m32 64x128x64/6/4 36.7 us against 39.5 for
    // the tuned 32x128x64/3/4/splitk3; fewtiles 128x128x64/5/8/splitk4 34.1
    // against 39.8 at 3 stages; skinny 64x64x64/8/4/splitk2 19.6 against
    // 21.1 at 6 stages (20.3 at 12, as deep as cuBLAS's 13 of 16 KB).
    auto try_deep = [&](GemmConfig c, int64_t k_tiles) {
      const int normal = c.num_stages;
      for (int st : {8, 6, 5}) {
        if (st <= normal || st > k_tiles) continue;
        c.num_stages = st;
        const ConfigCost cost =
            config_cost(graph, plan, c, target, cuda, max_shared_bytes, acc_limit, spec);
        if (!cost.feasible) continue;  // (too much shared memory: one stage fewer)
        if (kernels.insert(cost.fingerprint).second) add(c);
        return;
      }
    };
    for (const GemmConfig& b : base) {
      const int64_t tiles = output_tiles(step, b), k_tiles = k_tiles_of(step, b);
      try_deep(b, k_tiles);
      for (int s : {2, 3, 4, 6, 8, 12, 16}) {
        const int64_t per = (k_tiles + s - 1) / s;
        if (per < 2 || (s - 1) * per >= k_tiles || tiles * s > 2 * int64_t{sm_count}) continue;
        GemmConfig c = b;
        c.split_k = s;
        c.num_stages = static_cast<int>(std::min<int64_t>(b.num_stages, per));
        const ConfigCost cost =
            config_cost(graph, plan, c, target, cuda, max_shared_bytes, acc_limit, spec);
        if (!cost.feasible || !kernels.insert(cost.fingerprint).second) continue;
        add(c);
        try_deep(c, per);
      }
    }
  }
  // Persistent kernels (issue 15, item 5): where the tiles outnumber the
  // SMs, the largest-tile configs the persistent pass takes (at most 4:
  // sm_90a, a warp-specialized main loop, constant sizes, no split-K;
  // config_cost says so) again with their blocks looping over the tiles,
  // each with its stages, one fewer (the staged epilogue then fits beside
  // the stage rings, which the producer refills during it) and one more
  // (a short K loop: the ring then holds more of the next tiles, which the
  // producer fills while the MMA warpgroups store). Measured on the H200:
  // gather_heavy 74.8 -> 70.8 us at 128x256x64/3/8 (bench/RESULTS.md,
  // session 7); pointcloud_gather (2 K tiles a tile) 182 us at
  // 128x128x64/3/8/persistent, which the 2-stage base alone would not have
  // tried (session 8); slower on single-wave programs, so none is tried there.
  // Each base also gets its deepest ring of at most 8 stages that fits
  // beside the staged epilogue: a bandwidth-bound tile loop wants the
  // loads of the next tiles in flight (pointcloud_gather at BLOCK_K 32,
  // 16 KB stages: 128x128x32/6/8/persistent 148.7 us against 159.8 at the
  // base's 3 stages, session 9).
  constexpr int kDeepestPersistentRing = 8;
  if (sm_count > 0 && target.has_wgmma() && gemm_symbolic_dim(graph, step_in).empty()) {
    std::vector<GemmConfig> base;
    for (const GemmConfig& c : out)
      if (c.split_k == 1 && !c.persistent && output_tiles(step, c) > sm_count) base.push_back(c);
    std::stable_sort(base.begin(), base.end(), [](const GemmConfig& a, const GemmConfig& b) {
      return a.block_m * a.block_n > b.block_m * b.block_n;
    });
    // Persistent config c (ping-pong where c says so), not in the space
    // yet, where it fits with at most `unstaged` epilogues stored from
    // registers: added if its kernel is new; its count of such epilogues
    // (nullopt: it does not fit or is known). The deep rings count them
    // with `whole_tile` (whole-tile staging): a ring so deep that only the
    // per-warp slabs fit beside it is not searched (measured on the H200,
    // session 15: 4 stages at 128x256x64 no faster than 3 on gather_heavy,
    // 3% slower on the 8192^3 GEMM), which keeps the space as it was.
    tir::CudaOptions whole_tile = cuda;
    whole_tile.warp_staged_epilogue = false;
    auto try_persistent = [&](const GemmConfig& c, int unstaged,
                              bool deep = false) -> std::optional<int> {
      for (const GemmConfig& o : out)
        if (same_config(o, c)) return std::nullopt;
      const ConfigCost cost =
          config_cost(graph, plan, c, target, cuda, max_shared_bytes, acc_limit, spec);
      if (!cost.feasible || !(c.pingpong ? cost.pingpong : cost.persistent)) return std::nullopt;
      const int counted =
          deep ? config_cost(graph, plan, c, target, whole_tile, max_shared_bytes, acc_limit, spec)
                     .unstaged_epilogues
               : cost.unstaged_epilogues;
      if (counted > unstaged) return std::nullopt;
      if (kernels.insert(cost.fingerprint).second) add(c);  // (else: fits, already timed)
      return counted;
    };
    constexpr int kAnyUnstaged = std::numeric_limits<int>::max();
    int bases = 0;
    for (const GemmConfig& b : base) {
      if (bases == 4) break;
      const size_t before = out.size();
      for (int delta : {0, -1, 1}) {
        GemmConfig c = b;
        c.persistent = true;
        c.num_stages = b.num_stages + delta;
        if (c.num_stages < 2 || c.num_stages > 6) continue;
        try_persistent(c, kAnyUnstaged);
      }
      GemmConfig at_base = b;
      at_base.persistent = true;
      const ConfigCost base_cost =
          config_cost(graph, plan, at_base, target, whole_tile, max_shared_bytes, acc_limit, spec);
      for (int s = kDeepestPersistentRing; base_cost.feasible && s > b.num_stages + 1; --s) {
        GemmConfig c = at_base;
        c.num_stages = s;
        if (try_persistent(c, base_cost.unstaged_epilogues, /*deep=*/true)) break;
      }
      bases += out.size() > before;
    }
    // Ping-pong (persistent, two one-warpgroup teams taking alternate
    // tiles: one's epilogue runs during the other's main loop): the largest
    // 4-warp tile, at its stages and at a ring of two tiles' K loops (the
    // producer a whole tile ahead, for the other team), at most 8 stages
    // and keeping both teams' staged epilogues. Measured on the H200
    // (session 9, with TMA-stored epilogues): pointcloud_gather (3 K tiles)
    // 131.2 us at 128x128x32/6/4/pingpong against 139.7 at
    // 128x128x32/6/8/persistent; on long K loops it loses (seed 43.2 us
    // against 34.4 at 128x256x64/3/8/persistent: a one-warpgroup 128x128
    // main loop covers half the latency a 128x256 one does with the same
    // ring bytes), so one base only.
    for (const GemmConfig& b : base) {
      if (b.num_warps != 4) continue;
      GemmConfig c = b;
      c.persistent = c.pingpong = true;
      const std::optional<int> unstaged = try_persistent(c, kAnyUnstaged, /*deep=*/true);
      if (!unstaged) continue;
      const int two_tiles = static_cast<int>(
          std::min<int64_t>(kDeepestPersistentRing, 2 * k_tiles_of(step, b)));
      for (int s = two_tiles; s > b.num_stages; --s) {
        c.num_stages = s;
        if (try_persistent(c, *unstaged, /*deep=*/true)) break;
      }
      break;
    }
  }
  // Stream-K (issue 12, item 1; StreamKSchedule): where the tiles take a
  // few waves of the SMs (at most 4) and leave the last one at most half
  // full, the largest persistent config again with the last wave's K
  // iterations shared out evenly over one block an SM. Measured on the
  // H200 (bench/RESULTS.md, session 22): 2304x4096x2560 f16 (180 tiles of
  // 128x256, 1.36 waves) 76.5 us against 90.0 persistent; level on the
  // 8192^3 GEMM (15.5 waves: 1532 against 1527); slower on the gathered
  // programs (gather_heavy 79 against 58: their persistent producer loads
  // the next tile's index ahead, stream-K's does not, and ptxas spills
  // 64-80 bytes in their fix-up) and below one wave (fewtiles 35 against
  // split-K's 26, decode_m32 42 against 34, the 2048^3 GEMM 43 against
  // 29), so none there, and none for a gathered operand.
  bool gathered = false;
  for (const OperandPrologue* op : {&step_in.a, &step_in.b})
    for (ValueId v : op->nodes) gathered = gathered || graph.node(v).kind == OpKind::Index;
  if (sm_count > 0 && target.has_wgmma() && gemm_symbolic_dim(graph, step_in).empty() &&
      !gathered) {
    const GemmConfig* best = nullptr;
    for (const GemmConfig& c : out)
      if (c.persistent && !c.pingpong && c.stream_k == 0 &&
          (!best || c.block_m * c.block_n > best->block_m * best->block_n))
        best = &c;
    if (best) {
      GemmConfig c = *best;
      c.stream_k = sm_count;
      const int64_t tiles = output_tiles(step, c), last = tiles % sm_count;
      bool known = false;
      for (const GemmConfig& o : out) known = known || same_config(o, c);
      if (tiles > sm_count && tiles <= 4 * int64_t{sm_count} && last > 0 &&
          2 * last <= sm_count && !known) {
        const ConfigCost cost =
            config_cost(graph, plan, c, target, cuda, max_shared_bytes, acc_limit, spec);
        if (cost.feasible && cost.persistent && kernels.insert(cost.fingerprint).second) add(c);
      }
    }
  }
  // Register A (issue 15; codegen/cuda/passes/register_a.h): for a gathered
  // operand on sm_90a, the largest warp-specialized configs again with the
  // gathered A loaded by the MMA warps into their wgmma fragments, where
  // the register_a pass takes them (config_cost says so), at most
  // kRegisterATwins, persistent ones first. Measured on the H200
  // (bench/RESULTS.md, session 25): moe_up_proj 1549 us against 1598 at
  // 128x256x64/4/8/persistent, the seed level (29.0 against 29.5 at
  // 128x256x64/3/8), gather_heavy 64.6 against 59.3 (slower: the timing
  // decides).
  constexpr int kRegisterATwins = 4;
  // Of those, the kRegisterAPrefetchTwins deepest (persistent first, then
  // the most stages: the winners so far) again with their fragment loads
  // prefetching 256 bytes into L2 (/ra256, CopyPlan::l2_prefetch): 2.5%
  // faster on gather_heavy, 1-2% slower on the seed and moe_up_proj (H100,
  // bench/RESULTS.md, session 32), so the timing decides.
  constexpr int kRegisterAPrefetchTwins = 2;
  // (What no config changes, checked before compiling any: a gathered A of
  // 16-bit elements, setmaxnreg's budgets.)
  bool gathered_a = false;
  for (ValueId v : step_in.a.nodes) gathered_a = gathered_a || graph.node(v).kind == OpKind::Index;
  if (target.has_wgmma() && gathered_a && wgmma && cuda.setmaxnreg) {
    std::vector<GemmConfig> base;
    for (const GemmConfig& c : out)
      if (!c.register_a && c.split_k == 1 && c.stream_k == 0 && !c.pingpong && c.block_k == 64 &&
          k_tiles_of(step, c) % tir::kRegisterASlots == 0)
        base.push_back(c);
    std::stable_sort(base.begin(), base.end(), [](const GemmConfig& a, const GemmConfig& b) {
      if (a.block_m * a.block_n != b.block_m * b.block_n)
        return a.block_m * a.block_n > b.block_m * b.block_n;
      return a.persistent && !b.persistent;
    });
    int twins = 0;
    std::vector<GemmConfig> added;
    for (GemmConfig c : base) {
      if (twins == kRegisterATwins) break;
      c.register_a = true;
      const ConfigCost cost =
          config_cost(graph, plan, c, target, cuda, max_shared_bytes, acc_limit, spec);
      if (!cost.feasible || !cost.register_a || !kernels.insert(cost.fingerprint).second) continue;
      add(c);
      added.push_back(c);
      ++twins;
    }
    std::stable_sort(added.begin(), added.end(), [](const GemmConfig& a, const GemmConfig& b) {
      if (a.persistent != b.persistent) return a.persistent;
      return a.num_stages > b.num_stages;
    });
    if (added.size() > static_cast<size_t>(kRegisterAPrefetchTwins))
      added.resize(kRegisterAPrefetchTwins);
    for (GemmConfig p : added) {
      p.register_a_l2_prefetch = 256;
      const ConfigCost pc =
          config_cost(graph, plan, p, target, cuda, max_shared_bytes, acc_limit, spec);
      if (pc.feasible && pc.register_a && kernels.insert(pc.fingerprint).second) add(p);
    }
  }
  // The split tail (issue 15; codegen/cuda/passes/split_tail.h): on sm_90a,
  // the largest tile's one-tile-a-block warp-specialized configs again with
  // their last k-tiles N half by N half, the default tail long
  // (default_split_tail), where the split_tail pass takes them (config_cost
  // says so): of each arrangement (register A with or without its L2
  // prefetch, or none) the deepest ring, at most kSplitTailTwins, register A
  // first. Measured on an H100 (bench/RESULTS.md, session 44, two rounds):
  // the seed at 128x256x64/4/8/ra256 29.4, 29.0 us with a tail of 3 against
  // 29.7, 29.4 without (its one wave's last epilogue is the kernel's end);
  // persistent kernels lose (gather_heavy 56.1-56.7 against 55.3-56.0 at
  // /persistent/ra256, 58.5-59.7 against 58.0 at /persistent), so none of
  // those. The timing decides.
  constexpr int kSplitTailTwins = 3;
  if (target.has_wgmma() && wgmma) {
    std::vector<GemmConfig> base;
    for (const GemmConfig& c : out)
      if (c.split_tail == 0 && c.split_k == 1 && c.stream_k == 0 && !c.persistent)
        base.push_back(c);
    std::stable_sort(base.begin(), base.end(), [](const GemmConfig& a, const GemmConfig& b) {
      if (a.block_m * a.block_n != b.block_m * b.block_n)
        return a.block_m * a.block_n > b.block_m * b.block_n;
      if (a.register_a != b.register_a) return a.register_a;
      if (a.register_a_l2_prefetch != b.register_a_l2_prefetch)
        return a.register_a_l2_prefetch > b.register_a_l2_prefetch;
      return a.num_stages > b.num_stages;
    });
    int twins = 0;
    std::set<std::tuple<int, int, bool, int>> arrangements;
    for (GemmConfig c : base) {
      if (twins == kSplitTailTwins) break;
      if (c.block_m * c.block_n != base.front().block_m * base.front().block_n) break;
      if (!arrangements.insert({c.block_m, c.block_k, c.register_a, c.register_a_l2_prefetch})
               .second)
        continue;
      c.split_tail = codegen::default_split_tail(
          c.num_stages, /*persistent=*/false, c.register_a ? codegen::kRegisterAAhead : 0,
          k_tiles_of(step, c));
      if (c.split_tail < 1) continue;
      const ConfigCost cost =
          config_cost(graph, plan, c, target, cuda, max_shared_bytes, acc_limit, spec);
      if (!cost.feasible || !cost.split_tail || !kernels.insert(cost.fingerprint).second) continue;
      add(c);
      ++twins;
    }
  }
  return out;
}

int assumed_sm_count(const tir::Target& target) {
  switch (target.sm) {
    case 80:
      return 108;
    case 86:
      return 84;
    default:
      return 132;
  }
}

std::string stream_k_reason(const GemmConfig& c, const KernelStep& step, int sm_count) {
  const int64_t tiles = output_tiles(step, c), k_tiles = k_tiles_of(step, c);
  const std::optional<StreamKSchedule> s = stream_k_schedule(tiles, k_tiles, c.stream_k);
  if (!s) return "no stream-K: nothing to share out (no tiles or no K iterations)";
  const int64_t waves = (tiles + sm_count - 1) / sm_count;
  return fmt::format(
      "stream-K over {} blocks: {} tiles of {} K tiles would take {} wave(s) of {} SMs, the last "
      "{}% full; the first {} tiles go round robin ({} a block), the {} K iterations of the last "
      "{} are shared out, {} or {} a block in K order; a tile cut into pieces (up to {}) has "
      "their f32 partials summed in K order by the last to arrive, which runs the epilogue once",
      s->units, tiles, k_tiles, waves, sm_count,
      (tiles - (waves - 1) * sm_count) * 100 / sm_count, s->dp_tiles, s->dp_tiles / s->units,
      s->sk_tiles * k_tiles, s->sk_tiles, s->per_unit, s->per_unit + (s->extra > 0 ? 1 : 0),
      s->peers);
}

bool bandwidth_bound_gemm(const GemmGeometry& g) {
  return g.k <= 256 && g.n <= 256;
}

LowerOptions TunedChoice::lower_for(PlanKind p) const {
  LowerOptions lo;
  lo.gemm_config = p == PlanKind::kFused ? fused_config : unfused_config;
  return lo;
}

std::vector<size_t> nvrtc_compile_order(const std::vector<bool>& slow) {
  std::vector<size_t> order(slow.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(), [&](size_t i) { return slow[i]; });
  return order;
}

std::vector<std::string> spill_skips(const std::vector<TuneCandidate>& candidates) {
  // Per plan: whether a candidate compiled without spilling.
  std::set<PlanKind> clean;
  for (const TuneCandidate& c : candidates)
    if (!c.cublaslt && c.error.empty() && c.spill_bytes == 0) clean.insert(c.plan);
  std::vector<std::string> out(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    const TuneCandidate& c = candidates[i];
    if (c.cublaslt || !c.error.empty() || c.spill_bytes == 0 || !clean.count(c.plan)) continue;
    out[i] = fmt::format(
        "{} {} bytes to local memory (stores and loads); not timed: the {} plan has candidates "
        "that do not spill",
        kSpillSkip, c.spill_bytes, plan_kind_name(c.plan));
  }
  return out;
}

std::optional<PlanPick> pick_plan(double fused_us, double unfused_us, double cublaslt_us,
                                  double margin) {
  // In order of preference: our fused plan, our unfused plan, then the
  // library's GEMM (it must be faster by the margin to be worth a dependency
  // on libcublasLt at run time).
  const std::pair<PlanPick, double> order[] = {{{PlanKind::kFused, false}, fused_us},
                                               {{PlanKind::kUnfused, false}, unfused_us},
                                               {{PlanKind::kUnfused, true}, cublaslt_us}};
  // A plan must beat the fastest of those before it (chosen or not) by the
  // margin.
  std::optional<PlanPick> best;
  double fastest_us = 0;
  for (const auto& [pick, us] : order) {
    if (!(us >= 0)) continue;
    const bool first = !best;
    if (first || us < fastest_us * (1 - margin)) best = pick;
    fastest_us = first ? us : std::min(fastest_us, us);
  }
  return best;
}

namespace {
// The plans other than `won` of (fused, unfused, unfused+cuBLASLt) as
// (name, median us; < 0: not measured): " vs unfused 64.8 us, ..." for those
// timed, and " (unfused: no candidate ran)" for a plan of ours that was not
// (cuBLASLt not being a candidate is no news).
std::pair<std::string, std::string> other_plans(const std::pair<std::string, double> (&plans)[3],
                                                size_t won) {
  std::string others, missing;
  for (size_t i = 0; i < 3; ++i) {
    if (i == won) continue;
    if (plans[i].second >= 0)
      others += fmt::format("{}{} {:.1f} us", others.empty() ? " vs " : ", ", plans[i].first,
                            plans[i].second);
    else if (i < 2)
      missing += fmt::format(" ({}: no candidate ran)", plans[i].first);
  }
  return {others, missing};
}

// The three plans as (name, median us) for other_plans, and the winner's
// index. Where the unfused plan is the fused plan (TunedChoice::
// unfused_same_as_fused) it is not a plan of its own: the fused one is
// named "fused = unfused" and the unfused one has no time (and is not
// reported as missing by others()).
struct PlanTimes {
  std::pair<std::string, double> plans[3];
  size_t won = 0;
  bool unfused_same = false;
  // other_plans' text, without "unfused: no candidate ran" when the unfused
  // plan ran as the fused one.
  std::pair<std::string, std::string> others() const {
    auto o = other_plans(plans, won);
    if (unfused_same) o.second.clear();
    return o;
  }
};
PlanTimes plan_times(double fused_us, double unfused_us, double cublaslt_us, bool unfused_same,
                     bool cublaslt, bool fused_won) {
  PlanTimes t;
  t.unfused_same = unfused_same;
  t.plans[0] = {unfused_same ? "fused = unfused" : "fused", fused_us};
  t.plans[1] = {"unfused", unfused_same ? -1.0 : unfused_us};
  t.plans[2] = {"unfused+cuBLASLt", cublaslt_us};
  t.won = cublaslt ? 2 : fused_won ? 0 : 1;
  return t;
}
}  // namespace

std::string TunedChoice::summary() const {
  // The winner first, then each other plan: its time, or that none ran
  // (the unfused plan, when it is the fused plan, under the fused plan's
  // name: "fused = unfused").
  const PlanTimes t = plan_times(fused_us, unfused_us, cublaslt_us, unfused_same_as_fused, cublaslt,
                                 plan == PlanKind::kFused);
  const auto& plans = t.plans;
  const size_t won = t.won;
  std::string s = cublaslt
                      ? fmt::format("unfused+cuBLASLt, {:.1f} us", cublaslt_us)
                      : fmt::format("{}, {}, {:.1f} us", plans[won].first,
                                    gemm_config ? gemm_config_name(*gemm_config) : "default config",
                                    plans[won].second);
  const auto [others, missing] = t.others();
  // A faster plan that did not win lost by pick_plan's margin: say so.
  size_t fastest = won;
  for (size_t i = 0; i < 3; ++i)
    if (plans[i].second >= 0 && plans[i].second < plans[fastest].second) fastest = i;
  if (fastest != won)
    s += others + missing +
         fmt::format("; {} kept: {} is {:.1f}% faster, inside the plan margin", plans[won].first,
                     plans[fastest].first,
                     100 * (plans[won].second - plans[fastest].second) / plans[won].second);
  else
    s += others + missing;
  return s;
}

cache::TuningKey tuning_key(const Graph& graph, const TuneDevice& device, bool allow_tf32,
                            const tir::CudaOptions& cuda, const std::vector<int64_t>& buckets) {
  cache::TuningKey key;
  key.program = graph.to_string();
  for (ValueId p : graph.parameters()) {
    key.shapes.push_back(graph.node(p).shape);
    key.dtypes.emplace_back(dtype_name(graph.node(p).dtype));
  }
  key.device = device.key();
  tir::CudaOptions codegen = cuda;
  codegen.allow_tf32 = false;  // (said by the flag above)
  const std::string options = codegen.key();
  key.extra = std::string(kFormat) + (allow_tf32 ? " allow_tf32" : "") +
              (options.empty() ? "" : " cuda:" + options);
  if (!graph.symbols().empty()) {
    // Per size bucket: the program's text is its generic graph's (the same
    // for every binding but for the values in its `symbols` line and what
    // derives from them), so the bucket is the key, not the graph's values.
    TF_CHECK(buckets.size() == graph.symbols().size(),
             "a tuning key of a program with symbolic dims needs a bucket per symbol");
    key.program = key.program.substr(key.program.find('\n') + 1);  // drop "symbols ..."
    key.extra += " buckets";
    for (size_t s = 0; s < buckets.size(); ++s)
      key.extra += fmt::format(" {}={}", graph.symbols()[s].name, buckets[s]);
    for (size_t i = 0; i < graph.parameters().size(); ++i) {
      const Node& n = graph.node(graph.parameters()[i]);
      for (size_t d = 0; d < n.shape.size(); ++d)
        if (n.symbol(d) != kFixedDim) key.shapes[i][d] = buckets[n.symbol(d)];
    }
  }
  return key;
}

json choice_to_json(const TunedChoice& c) {
  json cands = json::array();
  for (const TuneCandidate& t : c.candidates) cands.push_back(candidate_to_json(t));
  auto cfg = [](const std::optional<GemmConfig>& g) {
    return g ? gemm_config_to_json(*g) : json(nullptr);
  };
  return {{"format", kFormat},
          {"plan", std::string(plan_kind_name(c.plan))},
          {"cublaslt", c.cublaslt},
          {"gemm_config", cfg(c.gemm_config)},
          {"fused_config", cfg(c.fused_config)},
          {"unfused_config", cfg(c.unfused_config)},
          {"times",
           {{"fused_us", c.fused_us},
            {"unfused_us", c.unfused_us},
            {"cublaslt_us", c.cublaslt_us},
            {"candidates", cands}}},
          {"cublaslt_note", c.cublaslt_note},
          {"unfused_same_as_fused", c.unfused_same_as_fused},
          {"tuned_at", c.tuned_at},
          {"tuning_seconds", c.tuning_seconds},
          {"device", c.device}};
}

std::optional<TunedChoice> choice_from_json(const json& j) {
  if (!j.is_object() || j.value("format", json()) != kFormat) return std::nullopt;
  TunedChoice c;
  auto plan = plan_from_json(j.value("plan", json()));
  if (!plan) return std::nullopt;
  c.plan = *plan;
  if (!optional_config(j, "gemm_config", c.gemm_config) ||
      !optional_config(j, "fused_config", c.fused_config) ||
      !optional_config(j, "unfused_config", c.unfused_config))
    return std::nullopt;
  auto times = j.find("times");
  if (times == j.end() || !times->is_object()) return std::nullopt;
  auto num = [](const json& o, const char* key, double& out) {
    auto it = o.find(key);
    if (it == o.end() || !it->is_number()) return false;
    out = it->get<double>();
    return true;
  };
  if (!num(*times, "fused_us", c.fused_us) || !num(*times, "unfused_us", c.unfused_us) ||
      !num(j, "tuning_seconds", c.tuning_seconds))
    return std::nullopt;
  // The cuBLASLt fields: absent in an entry made before that candidate
  // existed (then our kernels won, cuBLASLt unmeasured); present, they must
  // be well-typed.
  if (auto it = j.find("cublaslt"); it != j.end()) {
    if (!it->is_boolean()) return std::nullopt;
    c.cublaslt = it->get<bool>();
  }
  if (times->contains("cublaslt_us") && !num(*times, "cublaslt_us", c.cublaslt_us))
    return std::nullopt;
  if (auto it = j.find("cublaslt_note"); it != j.end()) {
    if (!it->is_string()) return std::nullopt;
    c.cublaslt_note = it->get<std::string>();
  } else {
    c.cublaslt_note = "not measured (tuned before unfused+cuBLASLt was a candidate; --retune)";
  }
  // Absent in an entry made before the tuner compared the plans' steps.
  if (auto it = j.find("unfused_same_as_fused"); it != j.end()) {
    if (!it->is_boolean()) return std::nullopt;
    c.unfused_same_as_fused = it->get<bool>();
  }
  if (c.cublaslt && (c.plan != PlanKind::kUnfused || c.cublaslt_us < 0)) return std::nullopt;
  if ((c.cublaslt ? c.cublaslt_us : c.plan == PlanKind::kFused ? c.fused_us : c.unfused_us) < 0)
    return std::nullopt;
  auto cands = times->find("candidates");
  if (cands == times->end() || !cands->is_array()) return std::nullopt;
  for (const json& e : *cands) {
    if (!e.is_object()) return std::nullopt;
    TuneCandidate t;
    auto p = plan_from_json(e.value("plan", json()));
    if (!p) return std::nullopt;
    t.plan = *p;
    if (!optional_config(e, "config", t.config) || !num(e, "median_us", t.median_us))
      return std::nullopt;
    if (!optional_count(e, "repeats", t.repeats) || !optional_string(e, "error", t.error) ||
        !optional_count(e, "spill_bytes", t.spill_bytes))
      return std::nullopt;
    if (auto b = e.find("cublaslt"); b != e.end()) {
      if (!b->is_boolean()) return std::nullopt;
      t.cublaslt = b->get<bool>();
    }
    c.candidates.push_back(t);
  }
  auto at = j.find("tuned_at");
  if (at == j.end() || !at->is_string()) return std::nullopt;
  c.tuned_at = at->get<std::string>();
  if (!optional_string(j, "device", c.device)) return std::nullopt;
  return c;
}

std::optional<TunedChoice> cached_choice(const Graph& graph, const TuneDevice& device,
                                         bool allow_tf32, const tir::CudaOptions& cuda,
                                         const std::vector<int64_t>& buckets,
                                         const std::string& cache_root) {
  std::optional<cache::TuningCache> tc = cache::default_tuning_cache({}, cache_root);
  if (!tc) return std::nullopt;
  std::optional<json> v = tc->get(tuning_key(graph, device, allow_tf32, cuda, buckets).material());
  if (!v) return std::nullopt;
  return choice_from_json(*v);
}

std::string tune_phases(const TuneResult& result) {
  return fmt::format("passes {:.1f} s, NVRTC {:.1f} s (slowest kernel {:.1f} s), timing {:.1f} s{}",
                     result.compile_seconds, result.nvrtc_seconds, result.nvrtc_longest_seconds,
                     result.timing_seconds,
                     result.choice.plan_runoff ? ", the plans' winners then in alternation" : "");
}

TuneResult tune(const Graph& graph, const std::vector<Tensor>& inputs, const TuneOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const TuneDevice& device = options.device;
  TuneResult result;
  std::optional<cache::TuningCache> tc;
  if (options.use_cache)
    tc = cache::default_tuning_cache(
        [](const std::string& message) {
          std::fprintf(stderr, "tilefuse: warning: the tuning cache is not usable (%s)\n",
                       message.c_str());
        },
        options.cache_root);
  const std::string material =
      tuning_key(graph, device, options.allow_tf32, options.cuda,
                 options.specialization.size_hints).material();
  if (tc && !options.retune) {
    if (std::optional<json> v = tc->get(material)) {
      if (std::optional<TunedChoice> c = choice_from_json(*v)) {
        result.choice = std::move(*c);
        result.from_cache = true;
        result.candidates = static_cast<int>(result.choice.candidates.size());
        result.seconds = seconds_since(t0);
        return result;
      }
    }
  }
  if (inputs.size() != graph.parameters().size())
    throw UserError(fmt::format("tune: the program takes {} inputs, got {}",
                                graph.parameters().size(), inputs.size()));
  const bool gpu = device.target.is_cuda();
  cuda::Device* dev = gpu ? &default_device() : nullptr;
  const int threads = options.threads > 0 ? options.threads : usable_cpus();

  // The candidates: each plan with each config of its largest GEMM's space;
  // none for the unfused plan where it has the fused plan's steps.
  std::vector<Slot> slots;
  TunedChoice& choice = result.choice;
  const Plan fused_plan = build_plan(graph, PlanKind::kFused);
  for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
    const Plan plan = kind == PlanKind::kFused ? fused_plan : build_plan(graph, kind);
    if (kind == PlanKind::kUnfused && same_steps(graph, fused_plan, plan)) {
      choice.unfused_same_as_fused = true;
      continue;
    }
    const KernelStep* step = largest_gemm_step(plan);
    if (!step) {
      Slot s;
      s.cand.plan = kind;
      slots.push_back(std::move(s));
      continue;
    }
    const int64_t smem = device.max_shared_bytes > 0 ? device.max_shared_bytes
                                                     : default_max_shared_bytes(device.target);
    // The config applies to every GEMM step: no split-K (sm_count 0) where
    // any of them has a symbolic size (gemm_symbolic_dim).
    bool symbolic_gemms = false;
    for (const KernelStep& st : plan.steps)
      if (st.kind == StepKind::kGemm && !gemm_symbolic_dim(graph, st).empty())
        symbolic_gemms = true;
    for (const GemmConfig& c :
         gemm_config_space(graph, *step, device.target, smem, kind, options.cuda,
                           symbolic_gemms ? 0 : (device.sm_count > 0 ? device.sm_count : 132),
                           &options.specialization)) {
      Slot s;
      s.cand.plan = kind;
      s.cand.config = c;
      slots.push_back(std::move(s));
    }
  }
  result.candidates = static_cast<int>(slots.size());
  Progress progress(options.progress);
  const size_t total = slots.size();

  // Compile: the pass pipeline and the emitter for every candidate, in parallel.
  auto phase = std::chrono::steady_clock::now();
  std::atomic<size_t> compiled_count{0};
  parallel_for(slots.size(), threads, [&](size_t i) {
    Slot& s = slots[i];
    try {
      CompileOptions co;
      co.plan = s.cand.plan;
      co.target = device.target;
      co.lower.gemm_config = s.cand.config;
      co.lower.specialization = options.specialization;
      co.allow_tf32 = options.allow_tf32;
      co.cuda = options.cuda;
      s.compiled = std::make_shared<CompiledProgram>(compile(graph, co));
      // The emitter's exact shared memory, before NVRTC spends time on it.
      const int64_t smem_limit = device.max_shared_bytes > 0
                                     ? device.max_shared_bytes
                                     : default_max_shared_bytes(device.target);
      for (const CompiledKernel& ck : s.compiled->kernels)
        if (ck.cuda && s.cand.error.empty())
          s.cand.error = shared_memory_excess(ck.cuda->name, ck.cuda->dynamic_shared_bytes,
                                              smem_limit, "the GPU");
      if (!s.cand.error.empty()) s.compiled.reset();
    } catch (const std::exception& e) {
      s.cand.error = std::string("compile: ") + e.what();
    }
    const size_t n = ++compiled_count;
    if (!gpu)
      progress.show(fmt::format("tuning {}: compiled {}/{} candidates", options.name, n, total));
  });

  result.compile_seconds = seconds_since(phase);
  phase = std::chrono::steady_clock::now();

  // NVRTC: every distinct kernel source once, in parallel, through the
  // kernel cache, so that CudaProgram below only reads the cache.
  if (gpu) {
    std::vector<Source> sources;
    // (per source: a register_a candidate's kernel, slow to compile:
    // nvrtc_compile_order)
    std::vector<bool> slow;
    std::map<std::pair<std::string, std::string>, size_t> index;  // (name, source) -> sources
    for (Slot& s : slots) {
      if (!s.compiled) continue;
      for (const CompiledKernel& ck : s.compiled->kernels) {
        if (!ck.cuda) continue;
        auto key = std::make_pair(ck.cuda->name, ck.cuda->source);
        auto [it, fresh] = index.emplace(std::move(key), sources.size());
        if (fresh) {
          sources.push_back({&ck.cuda->source, &ck.cuda->name, {}, false});
          slow.push_back(false);
        }
        if (s.cand.config && s.cand.config->register_a) slow[it->second] = true;
        s.sources.push_back(it->second);
      }
    }
    const cuda::CompileOptions nvrtc = cuda_compile_options(device.target.name());
    std::atomic<size_t> done{0};
    const std::vector<size_t> order = nvrtc_compile_order(slow);
    parallel_for(order.size(), threads, [&](size_t o) {
      Source& src = sources[order[o]];
      const auto started = std::chrono::steady_clock::now();
      try {
        const cuda::CompiledKernel k = cache::compile_cuda_cached(
            *src.source, *src.name, nvrtc, &src.from_cache, options.cache_root);
        if (k.usage.present) src.spill_bytes = k.usage.spill_store_bytes + k.usage.spill_load_bytes;
      } catch (const std::exception& e) {
        src.error = std::string("NVRTC: ") + e.what();
      }
      src.seconds = seconds_since(started);
      const size_t n = ++done;
      progress.show(fmt::format("tuning {}: compiled {}/{} kernels for {} candidates", options.name,
                                n, sources.size(), total));
    });
    result.nvrtc_kernels = static_cast<int>(sources.size());
    for (const Source& src : sources) {
      result.nvrtc_cache_hits += src.from_cache ? 1 : 0;
      result.nvrtc_longest_seconds = std::max(result.nvrtc_longest_seconds, src.seconds);
    }
    for (Slot& s : slots)
      for (size_t i : s.sources) {
        if (!sources[i].error.empty() && s.cand.error.empty()) s.cand.error = sources[i].error;
        if (sources[i].error.empty()) s.cand.spill_bytes += sources[i].spill_bytes;
      }
    std::vector<TuneCandidate> cands;
    for (const Slot& s : slots) cands.push_back(s.cand);
    const std::vector<std::string> skips = spill_skips(cands);
    for (size_t i = 0; i < slots.size(); ++i)
      if (!skips[i].empty()) {
        slots[i].cand.error = skips[i];
        slots[i].spill_skipped = true;
        ++result.spilled;
      }
  }

  result.nvrtc_seconds = seconds_since(phase);
  phase = std::chrono::steady_clock::now();

  // Time: one candidate after another.
  bool gpu_warm = false;  // a candidate has been timed: the GPU is busy
  // Times the loaded `prog` of candidate `cand` with `repeats` timed runs (0:
  // one untimed run) and, when `outputs` is given, returns the outputs of its
  // last run. `final`: a re-timing with final_repeats, warmed up for
  // TuneOptions::final_warmup_ms, as the first timed run is; the others for
  // TuneOptions::warmup_ms.
  auto time_program = [&](CudaProgram& prog, TuneCandidate& cand, int repeats,
                          std::vector<Tensor>* outputs, bool final) {
    if (repeats > 0) {
      BenchOptions bo;
      bo.warmup = options.warmup;
      bo.repeats = repeats;
      bo.warmup_ms = final || !gpu_warm ? options.final_warmup_ms : options.warmup_ms;
      bo.flush_l2 = options.flush_l2;
      cand.median_us = time_cuda_program(prog, inputs, bo) * 1e3;
      gpu_warm = true;
      cand.repeats = repeats;
      if (outputs) *outputs = prog.outputs();
    } else if (outputs) {
      *outputs = prog.run(inputs);
    }
  };
  // The same for a candidate of our kernels (GPU or CPU).
  auto time_slot = [&](Slot& s, int repeats, std::vector<Tensor>* outputs, bool final) {
    if (gpu) {
      CudaProgramOptions po;
      po.cache_root = options.cache_root;
      CudaProgram prog(*s.compiled, *dev, po);
      time_program(prog, s.cand, repeats, outputs, final);
    } else {
      ExecuteOptions xo;
      xo.num_threads = options.cpu_threads;
      if (repeats > 0) {
        cuda::TimingOptions to;
        to.warmup = options.warmup;
        to.repeats = repeats;
        to.flush_l2 = options.flush_l2;
        s.cand.median_us =
            cuda::time_on_host([&] { execute(*s.compiled, inputs, xo); }, to).median_ms * 1e3;
      }
      if (outputs) *outputs = execute(*s.compiled, inputs, xo);
    }
    if (repeats > 0) s.cand.repeats = repeats;
  };
  const TuneCandidate* best = nullptr;
  size_t timed = 0;
  // The first run failure as thrown: when every candidate fails, that error
  // (e.g. a device-side index check) is what the caller sees, word for word.
  std::optional<std::string> first_run_error;
  // The outputs of the first candidate that ran (the heuristic default of
  // the fused plan, unless it failed): a candidate must agree with them to win.
  std::optional<std::vector<Tensor>> reference;
  std::string reference_name;
  auto run_candidate = [&](Slot& s) {
    if (!s.compiled) return;
    if (s.spill_skipped) {
      // Not a contender; first, it still gives the reference outputs (the
      // heuristic default stays the reference even when it spills).
      if (reference) return;
      try {
        std::vector<Tensor> outs;
        time_slot(s, 0, &outs, false);
        reference = std::move(outs);
        reference_name = candidate_name(s.cand);
      } catch (const std::exception&) {
        // (the next candidate to run gives the reference)
      }
      return;
    }
    if (!s.cand.error.empty()) return;
    try {
      std::vector<Tensor> outs;
      time_slot(s, std::max(1, options.repeats), reference ? nullptr : &outs, false);
      if (!reference) {
        reference = std::move(outs);
        reference_name = candidate_name(s.cand);
      }
      if (!best || s.cand.median_us < best->median_us) best = &s.cand;
    } catch (const std::exception& e) {
      s.cand.error = std::string("run: ") + e.what();
      s.cand.median_us = -1;
      if (!first_run_error) first_run_error = e.what();
    }
  };
  for (Slot& s : slots) {
    ++timed;
    run_candidate(s);
    progress.show(best ? fmt::format("tuning {}: {}/{} candidates, best {:.1f} us ({})",
                                     options.name, timed, total, best->median_us,
                                     candidate_name(*best))
                       : fmt::format("tuning {}: {}/{} candidates", options.name, timed, total));
  }
  // A plan whose candidates that compiled without spilling all failed to
  // run: its spilling ones run after all (a kernel that spills beats none).
  for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
    bool ran = false;
    for (const Slot& s : slots) ran = ran || (s.cand.plan == kind && s.cand.median_us >= 0);
    if (ran) continue;
    for (Slot& s : slots)
      if (s.cand.plan == kind && s.spill_skipped) {
        s.spill_skipped = false;
        s.cand.error.clear();
        --result.spilled;
        run_candidate(s);
      }
  }

  // Per plan: the fastest few (re-timed with final_repeats on the GPU),
  // each checked against the reference outputs; the fastest that agrees wins
  // the plan. Then unfused+cuBLASLt, and the fastest of the three.
  const bool retime = gpu && options.final_repeats > options.repeats;
  // A finalist's outputs against the reference; one that differs loses its
  // time and says by how much.
  auto agrees = [&](TuneCandidate& cand, const std::vector<Tensor>& outs) {
    const double err = max_output_error(outs, *reference);
    if (err <= agreement_tolerance(outs, options.allow_tf32)) return true;
    cand.error = fmt::format("output differs from {}'s: rel_err {:.3g}", reference_name, err);
    cand.median_us = -1;
    return false;
  };
  Slot* unfused_best = nullptr;  // the unfused plan's winner
  Slot* fused_best = nullptr;    // the fused plan's
  for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
    std::vector<Slot*> ok;
    for (Slot& s : slots)
      if (s.cand.plan == kind && s.cand.median_us >= 0) ok.push_back(&s);
    auto by_time = [](const Slot* a, const Slot* b) {
      return a->cand.median_us < b->cand.median_us;
    };
    std::stable_sort(ok.begin(), ok.end(), by_time);
    std::vector<Slot*> finals;
    const size_t want = static_cast<size_t>(std::max(1, options.finalists));
    for (Slot* s : ok) {
      if (finals.size() >= want) break;
      try {
        std::vector<Tensor> outs;
        time_slot(*s, retime ? options.final_repeats : 0, &outs, true);
        if (!agrees(s->cand, outs)) continue;
        finals.push_back(s);
      } catch (const std::exception& e) {
        s->cand.error = std::string("run: ") + e.what();
        s->cand.median_us = -1;
      }
    }
    if (finals.empty()) continue;
    std::stable_sort(finals.begin(), finals.end(), by_time);
    (kind == PlanKind::kFused ? choice.fused_us : choice.unfused_us) =
        finals.front()->cand.median_us;
    (kind == PlanKind::kFused ? choice.fused_config : choice.unfused_config) =
        finals.front()->cand.config;
    if (kind == PlanKind::kUnfused) unfused_best = finals.front();
    if (kind == PlanKind::kFused) fused_best = finals.front();
    if (kind == PlanKind::kFused && choice.unfused_same_as_fused) {
      // (The unfused plan is this plan: the same time, config and program.)
      choice.unfused_us = choice.fused_us;
      choice.unfused_config = choice.fused_config;
      unfused_best = finals.front();
    }
  }

  // The third plan: the unfused winner's program with its plain GEMM steps
  // on cuBLASLt (the library GEMM competes, as Inductor's extern_mm does),
  // timed and checked like a finalist of the others. Not a candidate, with
  // the reason, when it could not stand for what `run` would do with it.
  std::optional<Slot> blas;
  std::unique_ptr<CudaProgram> blas_program;  // (kept for the plan runoff)
  if (!gpu) {
    choice.cublaslt_note = "not a candidate on the CPU";
  } else if (!unfused_best) {
    choice.cublaslt_note = "not a candidate: the unfused plan did not run";
  } else if (cublaslt_gemm_kernels(*unfused_best->compiled).empty()) {
    choice.cublaslt_note =
        "not a candidate: no plain GEMM step in the unfused plan (a prologue, bias or epilogue, "
        "or operands cuBLASLt does not take, in every GEMM)";
  } else if (std::string why; !cuda::cublaslt_available(&why)) {
    choice.cublaslt_note = "not a candidate: cuBLASLt unavailable: " + why;
  } else {
    CudaProgramOptions po;
    po.cache_root = options.cache_root;
    po.cublaslt_gemms = true;  // f32 on TF32 only when compiled with allow_tf32
    std::unique_ptr<CudaProgram> prog;
    try {
      prog = std::make_unique<CudaProgram>(*unfused_best->compiled, *dev, po);
    } catch (const std::exception& e) {
      // E.g. no cuBLASLt algorithm for a step's shape: cuBLASLt cannot run it.
      choice.cublaslt_note = std::string("not a candidate: ") + e.what();
    }
    if (prog) {
      blas.emplace();
      blas->compiled = unfused_best->compiled;
      blas->cand.plan = PlanKind::kUnfused;
      blas->cand.config = unfused_best->cand.config;
      blas->cand.cublaslt = true;
      ++result.candidates;
      progress.show(fmt::format("tuning {}: unfused+cuBLASLt", options.name));
      try {
        time_program(*prog, blas->cand, std::max(1, options.repeats), nullptr, false);
        std::vector<Tensor> outs;
        time_program(*prog, blas->cand, retime ? options.final_repeats : 0, &outs, true);
        if (agrees(blas->cand, outs)) choice.cublaslt_us = blas->cand.median_us;
      } catch (const std::exception& e) {
        blas->cand.error = std::string("run: ") + e.what();
        blas->cand.median_us = -1;
      }
      if (choice.cublaslt_us < 0) choice.cublaslt_note = "failed: " + blas->cand.error;
      blas_program = std::move(prog);
    }
  }
  // The plan runoff (GPU, TuneOptions::plan_runoff): the plans' winners
  // timed again in alternation (cuda::time_interleaved_on_device), so that
  // the plan is chosen between times taken in the same power state. Timed
  // one after the other, a 1.4 ms GEMM timed later runs at a lower clock once
  // the GPU reaches its power cap (bench/RESULTS.md, session 37). The plans'
  // times become the runoff's; the candidate rows keep their finals' times
  // (a plan's configs are compared among those); where the runoff fails the
  // plans keep their finals' times too.
  if (gpu && retime && options.plan_runoff) {
    struct Entry {
      CudaProgram* program;
      double* us;
    };
    std::vector<std::unique_ptr<CudaProgram>> owned;
    std::vector<Entry> entries;
    try {
      auto add = [&](Slot* s, double* us) {
        if (!s || *us < 0) return;
        CudaProgramOptions po;
        po.cache_root = options.cache_root;
        owned.push_back(std::make_unique<CudaProgram>(*s->compiled, *dev, po));
        entries.push_back({owned.back().get(), us});
      };
      add(fused_best, &choice.fused_us);
      if (!choice.unfused_same_as_fused) add(unfused_best, &choice.unfused_us);
      if (blas && blas_program && choice.cublaslt_us >= 0)
        entries.push_back({blas_program.get(), &choice.cublaslt_us});
      if (entries.size() >= 2) {
        progress.show(fmt::format("tuning {}: the plans' winners in alternation", options.name));
        // One device copy of the inputs for every plan (as bench's rows):
        // bound last to first, so the cuBLASLt program's own copy from its
        // finals goes before the others bind.
        const auto shared = std::make_shared<const DeviceInputs>(*dev, inputs);
        for (auto e = entries.rbegin(); e != entries.rend(); ++e) e->program->bind(shared);
        std::vector<std::function<void()>> launches;
        for (const Entry& e : entries) {
          e.program->launch();
          e.program->check_status();
          launches.push_back([p = e.program] { p->launch(); });
        }
        cuda::TimingOptions to;
        to.warmup = options.warmup;
        to.repeats = options.final_repeats;
        to.warmup_ms = options.final_warmup_ms;
        to.flush_l2 = options.flush_l2;
        const std::vector<cuda::Timing> t = cuda::time_interleaved_on_device(*dev, launches, to);
        // (every status first: a failure leaves every plan its finals' time)
        for (const Entry& e : entries) e.program->check_status();
        for (size_t i = 0; i < entries.size(); ++i) *entries[i].us = t[i].median_ms * 1e3;
        if (choice.unfused_same_as_fused) choice.unfused_us = choice.fused_us;
        choice.plan_runoff = true;
      }
    } catch (const std::exception&) {
      // (a run that fails here ran as a finalist before: its times stand)
      choice.plan_runoff = false;
    }
  }
  if (blas) slots.push_back(std::move(*blas));
  progress.finish();
  for (const Slot& s : slots) {
    choice.candidates.push_back(s.cand);
    if (s.cand.median_us < 0) ++result.failed;
  }
  if (choice.fused_us < 0 && choice.unfused_us < 0) {
    if (first_run_error) throw UserError(*first_run_error);
    std::string first;
    for (const Slot& s : slots)
      if (!s.cand.error.empty()) {
        first = candidate_name(s.cand) + ": " + s.cand.error;
        break;
      }
    throw UserError(
        fmt::format("tuning: none of the {} candidates compiled and ran; the first "
                    "error ({})",
                    slots.size(), first));
  }
  const PlanPick pick =
      *pick_plan(choice.fused_us, choice.unfused_us, choice.cublaslt_us, options.plan_margin);
  choice.plan = pick.plan;
  choice.cublaslt = pick.cublaslt;
  // unfused+cuBLASLt: the config of the unfused program it runs (its other
  // kernels, and any GEMM step cuBLASLt does not take).
  choice.gemm_config =
      choice.plan == PlanKind::kFused ? choice.fused_config : choice.unfused_config;
  choice.tuned_at = iso_now();
  choice.device = device.key();
  result.timing_seconds = seconds_since(phase);
  result.seconds = seconds_since(t0);
  choice.tuning_seconds = result.seconds;
  if (tc) result.cache_written = tc->put(material, choice_to_json(choice));
  return result;
}

json tuning_account(const Graph& graph, const std::string& device, bool allow_tf32,
                    const std::vector<int64_t>& buckets) {
  std::optional<cache::TuningCache> tc = cache::default_tuning_cache();
  json none = {{"tuned", false}};
  if (!graph.symbols().empty() && buckets.size() != graph.symbols().size())
    return {{"tuned", false},
            {"note", "the program has symbolic dims: tunings are kept per size bucket (give "
                     "the sizes to see one)"}};
  if (!tc) return none;
  const cache::TuningKey want = tuning_key(graph, TuneDevice{}, allow_tf32, {}, buckets);
  std::optional<TunedChoice> found;
  const std::optional<tir::Target> target = tir::Target::parse(device);
  const bool exact = !device.empty() && (!target || !target->is_cuda());
  if (exact) {
    // A full device key: one lookup.
    cache::TuningKey key = want;
    key.device = device;
    if (std::optional<json> v = tc->get(key.material())) found = choice_from_json(*v);
  } else {
    // A target or nothing: read the directory for this program's entries.
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(tc->store().dir(), ec)) {
      if (entry.path().extension() != ".tfc") continue;
      const std::string stem = entry.path().stem().string();
      if (stem.empty() || stem.size() > cache::DiskCache::kMaxKeyLength ||
          stem.find_first_not_of("0123456789abcdef") != std::string::npos)
        continue;
      std::optional<std::string> payload = tc->store().get(stem);
      if (!payload) continue;
      json p = json::parse(*payload, nullptr, false);
      if (!p.is_object() || !p.contains("key") || !p["key"].is_string()) continue;
      const std::string material = p["key"].get<std::string>();
      json k = json::parse(material, nullptr, false);
      // Another entry's key, or a corrupt one (a field that is no string).
      std::string program, version, extra, dev;
      if (!k.is_object() || !optional_string(k, "program", program) ||
          !optional_string(k, "version", version) || !optional_string(k, "extra", extra) ||
          !optional_string(k, "device", dev) || program != want.program ||
          version != want.version || extra != want.extra)
        continue;
      if (!device.empty() &&
          (dev.size() <= device.size() ||
           dev.compare(dev.size() - device.size() - 1, std::string::npos, " " + device) != 0))
        continue;
      std::optional<json> v = tc->get(material);
      if (!v) continue;
      std::optional<TunedChoice> c = choice_from_json(*v);
      if (c && (!found || c->tuned_at > found->tuned_at)) found = std::move(c);
    }
  }
  if (!found) return none;
  const TunedChoice& c = *found;
  // By how much the winner won: the runner-up's time over the winner's.
  // (An unfused plan that is the fused plan is no runner-up of its own.)
  const double unfused_us = c.unfused_same_as_fused ? -1 : c.unfused_us;
  const double won = c.cublaslt                   ? c.cublaslt_us
                     : c.plan == PlanKind::kFused ? c.fused_us
                                                  : unfused_us;
  double runner_up = -1;
  for (double t : {c.fused_us, unfused_us, c.cublaslt_us})
    if (t >= 0 && t != won && (runner_up < 0 || t < runner_up)) runner_up = t;
  // (Two plans with the very same time: the runner-up is as fast.)
  int at_won = 0;
  for (double t : {c.fused_us, unfused_us, c.cublaslt_us}) at_won += t == won ? 1 : 0;
  if (at_won > 1) runner_up = won;
  json speedup = nullptr;
  if (won > 0 && runner_up > 0) speedup = runner_up / won;
  int failed = 0, spilled = 0;
  for (const TuneCandidate& t : c.candidates) {
    failed += t.median_us < 0 ? 1 : 0;
    spilled += t.median_us < 0 && std::string_view(t.error).starts_with(kSpillSkip) ? 1 : 0;
  }
  // The winning plan's runner-up config: its fastest other timed candidate
  // (what the winner beat within its own plan: e.g. the same tiles not
  // persistent, or one stage more).
  json config_runner_up = nullptr;
  if (!c.cublaslt && c.gemm_config) {
    const TuneCandidate* best = nullptr;
    for (const TuneCandidate& t : c.candidates)
      if (t.plan == c.plan && !t.cublaslt && t.median_us >= 0 && t.config &&
          !same_config(*t.config, *c.gemm_config) && (!best || t.median_us < best->median_us))
        best = &t;
    if (best)
      config_runner_up = {{"config", gemm_config_name(*best->config)},
                          {"median_us", best->median_us}};
  }
  return {{"tuned", true},
          {"device", c.device},
          {"plan", std::string(plan_kind_name(c.plan))},
          {"cublaslt", c.cublaslt},
          {"gemm_config", c.gemm_config ? gemm_config_to_json(*c.gemm_config) : json(nullptr)},
          {"config", c.gemm_config ? json(gemm_config_name(*c.gemm_config)) : json(nullptr)},
          {"fused_us", c.fused_us},
          {"unfused_us", c.unfused_us},
          {"unfused_same_as_fused", c.unfused_same_as_fused},
          {"cublaslt_us", c.cublaslt_us},
          {"cublaslt_note", c.cublaslt_note},
          {"speedup", speedup},
          {"candidates", c.candidates.size()},
          {"config_runner_up", config_runner_up},
          {"failed", failed},
          {"spilled", spilled},
          {"tuned_at", c.tuned_at},
          {"tuning_seconds", c.tuning_seconds}};
}

std::string render_tuning_text(const json& a) {
  if (!a.is_object() || a.value("tuned", false) != true)
    return "tuning: none cached (run tilefuse run or bench on the GPU to tune)";
  const bool blas = a.value("cublaslt", false);
  const std::string plan = a.value("plan", std::string("?"));
  const std::string config = a.contains("config") && a["config"].is_string()
                                 ? a["config"].get<std::string>()
                                 : std::string("default config");
  // The three plans as (name, time); the winner is `won`.
  const PlanTimes t = plan_times(a.value("fused_us", -1.0), a.value("unfused_us", -1.0),
                                 a.value("cublaslt_us", -1.0),
                                 a.value("unfused_same_as_fused", false), blas, plan == "fused");
  const auto& plans = t.plans;
  const size_t won = t.won;
  std::string s =
      blas ? fmt::format("tuning ({}, {}): unfused+cuBLASLt won, {:.1f} us", a.value("device", ""),
                         a.value("tuned_at", ""), plans[won].second)
           : fmt::format("tuning ({}, {}): {} {} won, {:.1f} us", a.value("device", ""),
                         a.value("tuned_at", ""), plans[won].first, config, plans[won].second);
  const auto [others, missing] = t.others();
  s += others;
  if (a.contains("speedup") && a["speedup"].is_number())
    s += fmt::format(" ({:.2f}x faster)", a["speedup"].get<double>());
  s += missing;
  const int spilled = a.value("spilled", 0);
  s += fmt::format("; {} candidates ({} skipped{}) in {:.1f} s", a.value("candidates", 0),
                   a.value("failed", 0),
                   spilled > 0 ? fmt::format(", {} for spills", spilled) : std::string(),
                   a.value("tuning_seconds", 0.0));
  if (plans[2].second < 0 && a.contains("cublaslt_note") && a["cublaslt_note"].is_string() &&
      !a["cublaslt_note"].get<std::string>().empty())
    s += "; unfused+cuBLASLt " + a["cublaslt_note"].get<std::string>();
  if (const auto r = a.find("config_runner_up"); r != a.end() && r->is_object())
    s += fmt::format("; runner-up {} {}, {:.1f} us", plans[won].first,
                     r->value("config", std::string("?")), r->value("median_us", -1.0));
  return s;
}

}  // namespace tilefuse::driver
