// The issue-3 CPU benchmark (not a test): the seed program in f32
//   def gather_mm(x: f32[S, S], y: f32[S, S], index: i64[S]):
//       return x[index] @ y
// as the compiler runs it (driver::compile: fused plan, lowered, the pass
// table; the kernel timed alone on the CPU executor), next to OpenBLAS sgemm on the ungathered
// x @ y in the same process, both with the same thread count. Median of
// --reps timed rounds (the executor and sgemm once each, interleaved) after
// one warm-up run each; min and max printed too.
//
//   build/bench/cpu_gemm_bench [--size 2048] [--reps 5] [--threads 2]
//                              [--block-m M --block-n N --block-k K] [--no-gather]
//                              [--openblas-core NAME] [--help]
//
// OpenBLAS picks its kernel when the library loads, from CPUID; on some
// VMs it falls back to its slowest kernel (Prescott on the AVX-512 test
// machine: 5x slower than SkylakeX there). The comparison must be with the
// kernel for the processor the bench runs on, so the bench decides: it
// reads the CPU's features, names the OpenBLAS core for them (SkylakeX for
// AVX-512, Haswell for AVX2 + FMA, Sandybridge for AVX, else OpenBLAS's own
// choice), and when the loaded core uses less of the vector ISA than that
// (a fallback) it re-executes itself with OPENBLAS_CORETYPE set to it (an
// OPENBLAS_CORETYPE inherited from the environment that forced a weaker
// core is replaced the same way: the bench's comparison is with OpenBLAS at
// its best here; --openblas-core NAME forces a core). The core that ran,
// and why, is printed.
#include <cblas.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "frontend/frontend.h"
#include "driver/compile.h"
#include "reference/inputs.h"
#include "runtime/cpu/executor.h"

extern "C" {
char* openblas_get_corename(void);
char* openblas_get_config(void);
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
}

using namespace tilefuse;

namespace {

struct Timing {
  double median = 0, min = 0, max = 0;
};

// One warm-up run of each, then `reps` rounds timing each once, interleaved
// so that both see the same load on a shared machine.
std::pair<Timing, Timing> time_interleaved(const std::function<void()>& a,
                                           const std::function<void()>& b, int reps) {
  a();
  b();
  std::vector<double> ta, tb;
  auto once = [](const std::function<void()>& fn) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int r = 0; r < reps; ++r) {
    ta.push_back(once(a));
    tb.push_back(once(b));
  }
  auto summary = [](std::vector<double> t) {
    std::sort(t.begin(), t.end());
    return Timing{t[t.size() / 2], t.front(), t.back()};
  };
  return {summary(ta), summary(tb)};
}

int arg_int(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

const char* arg_str(int argc, char** argv, const char* name) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return nullptr;
}

// The OpenBLAS core (OPENBLAS_CORETYPE name) for this processor's features;
// nullptr to keep OpenBLAS's own choice.
const char* core_for_this_cpu() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  if (__builtin_cpu_supports("avx")) return "Sandybridge";
  return nullptr;
}

bool same_core(const char* a, const char* b) {
  return a && b && strcasecmp(a, b) == 0;
}

// How much of the x86-64 vector ISA an OpenBLAS core uses (0: SSE only or
// unknown; 1 AVX; 2 AVX2 + FMA; 3 AVX-512), to tell a fallback from a
// better choice than ours (OpenBLAS may pick Cooperlake, an AVX-512 core
// with BF16, where we would say SkylakeX).
int core_level(const char* core) {
  static const std::pair<const char*, int> kLevels[] = {{"Sandybridge", 1}, {"Haswell", 2},
                                                        {"Zen", 2},         {"SkylakeX", 3},
                                                        {"Cooperlake", 3},  {"SapphireRapids", 3}};
  for (const auto& [name, level] : kLevels)
    if (same_core(core, name)) return level;
  return 0;
}

constexpr const char* kUsage =
    "usage: cpu_gemm_bench [--size S] [--reps R] [--threads T]\n"
    "                      [--block-m M --block-n N --block-k K] [--no-gather]\n"
    "                      [--openblas-core NAME]\n"
    "The seed program in f32 (x[index] @ y, S x S x S; --no-gather: x @ y) on the CPU\n"
    "executor, next to OpenBLAS sgemm on x @ y with the same thread count (default S 2048,\n"
    "R 5, T 2; tiles: the CPU default config). OpenBLAS runs the kernel for this processor\n"
    "(chosen from its features, or NAME), which is printed.\n";

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  // OpenBLAS has chosen its core already (at load time); run again with the
  // one for this CPU when it differs. TILEFUSE_BENCH_CORE marks the second
  // run (and holds why).
  const char* forced = arg_str(argc, argv, "--openblas-core");
  const char* want = forced ? forced : core_for_this_cpu();
  std::string core_note = "OpenBLAS's own choice";
  if (const char* note = std::getenv("TILEFUSE_BENCH_CORE")) {
    core_note = note;
  } else if (want && (forced ? !same_core(openblas_get_corename(), want)
                             : core_level(openblas_get_corename()) < core_level(want))) {
    const std::string why = std::string(forced ? "--openblas-core " : "chosen for this CPU's ") +
                            (forced ? forced : "features") + "; OpenBLAS had loaded " +
                            openblas_get_corename();
    setenv("OPENBLAS_CORETYPE", want, 1);
    setenv("TILEFUSE_BENCH_CORE", why.c_str(), 1);
    execv("/proc/self/exe", argv);
    std::perror("cpu_gemm_bench: re-executing with OPENBLAS_CORETYPE failed");
    return 2;
  } else if (want) {
    core_note = "OpenBLAS's own choice, as good as " + std::string(want) + " on this CPU";
  }
  const int64_t S = arg_int(argc, argv, "--size", 2048);
  const int reps = std::max(1, arg_int(argc, argv, "--reps", 5));
  const int threads = arg_int(argc, argv, "--threads", 2);
  const std::string s = std::to_string(S);
  // --no-gather: the executor on x @ y instead (to separate the gather's cost).
  bool no_gather = false;
  for (int i = 1; i < argc; ++i) no_gather |= std::strcmp(argv[i], "--no-gather") == 0;
  const std::string src = "def gather_mm(x: f32[" + s + ", " + s + "], y: f32[" + s + ", " + s +
                          "], index: i64[" + s + "]):\n    return " +
                          (no_gather ? "x @ y" : "x[index] @ y") + "\n";
  const Program prog = parse_program(src, "seed_f32.tfs");
  const Graph& g = prog.graph;
  // As `tilefuse run` compiles it: fused plan, lowered, the whole pass table
  // (--block-m/n/k override the heuristic config, as a tuner would).
  driver::CompileOptions co;
  const int bm = arg_int(argc, argv, "--block-m", 0), bn = arg_int(argc, argv, "--block-n", 0),
            bk = arg_int(argc, argv, "--block-k", 0);
  if (bm || bn || bk) {
    const GemmConfig def =
        default_cpu_gemm_config(g, driver::compile(g, {.optimize = false}).kernels[0].lowered.step);
    GemmConfig c = def;
    if (bm) c.block_m = bm;
    if (bn) c.block_n = bn;
    if (bk) c.block_k = bk;
    co.lower.gemm_config = c;
  }
  const driver::CompiledProgram compiled = driver::compile(g, co);
  const GemmConfig cfg = compiled.kernels.empty() || !compiled.kernels[0].lowered.gemm_config
                             ? GemmConfig{}
                             : *compiled.kernels[0].lowered.gemm_config;
  if (compiled.kernels.size() != 1) {
    std::fprintf(stderr, "expected one fused kernel, got %zu\n", compiled.kernels.size());
    return 2;
  }
  const tir::Kernel& kernel = compiled.kernels[0].kernel;
  const LoweredKernel& lowered = compiled.kernels[0].lowered;
  const std::vector<Tensor> inputs = make_random_inputs(g, 1);  // index: a permutation
  const Tensor& x = inputs[0];
  const Tensor& y = inputs[1];
  const Tensor& index = inputs[2];
  Tensor out = Tensor::full(DType::F32, {S, S}, NAN);
  std::vector<runtime::KernelArg> args;
  for (size_t i = 0; i < lowered.bindings.size(); ++i) {
    const ValueId v = lowered.bindings[i];
    const Tensor& t = v == lowered.step.output ? out : inputs[static_cast<size_t>(v)];
    args.emplace_back(kernel.params[i].name(), t);
  }
  runtime::ExecOptions eo;
  eo.num_threads = threads;

  openblas_set_num_threads(threads);
  const float* xp = reinterpret_cast<const float*>(x.data_ptr());
  const float* yp = reinterpret_cast<const float*>(y.data_ptr());
  std::vector<float> c(static_cast<size_t>(S * S));
  const int n = static_cast<int>(S);
  const auto [exec, blas] = time_interleaved(
      [&] { runtime::execute(kernel, args, eo); },
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, xp, n, yp, n, 0.0f,
                    c.data(), n);
      },
      reps);

  // Correctness: the executor's output against sgemm on the gathered x.
  std::vector<float> xg(static_cast<size_t>(S * S));
  const int64_t* ip = reinterpret_cast<const int64_t*>(index.data_ptr());
  for (int64_t m = 0; m < S; ++m) {
    const int64_t r = no_gather ? m : ip[m] < 0 ? ip[m] + S : ip[m];
    std::memcpy(&xg[static_cast<size_t>(m * S)], xp + r * S, sizeof(float) * S);
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, xg.data(), n, yp, n, 0.0f,
              c.data(), n);
  double d2 = 0, r2 = 0;
  const float* op = reinterpret_cast<const float*>(out.data_ptr());
  for (int64_t i = 0; i < S * S; ++i) {
    const double d = static_cast<double>(op[i]) - c[static_cast<size_t>(i)];
    d2 += d * d;
    r2 += static_cast<double>(c[static_cast<size_t>(i)]) * c[static_cast<size_t>(i)];
  }
  const double rel = std::sqrt(d2 / r2);

  const char* l2 = std::getenv("OPENBLAS_L2_SIZE");
  const double flops = 2.0 * S * S * S;
  std::printf("seed program f32, %lldx%lldx%lld, %d threads, median of %d after a warm-up; "
              "executor tiles %dx%dx%d%s\n",
              static_cast<long long>(S), static_cast<long long>(S), static_cast<long long>(S),
              threads, reps, cfg.block_m, cfg.block_n, cfg.block_k,
              co.lower.gemm_config ? " (overridden)" : " (default config)");
  std::printf("OpenBLAS: core %s (%s), config \"%s\", %d threads; OPENBLAS_L2_SIZE=%s\n",
              openblas_get_corename(), core_note.c_str(), openblas_get_config(),
              openblas_get_num_threads(), l2 ? l2 : "(unset)");
  // The ratio of medians, and of the fastest runs (the machine is shared:
  // the fastest run is the least disturbed one).
  std::printf("| what | median (s) | GFLOP/s | vs OpenBLAS | min..max (s) | best-run ratio |\n"
              "|---|---|---|---|---|---|\n");
  std::printf("| cpu executor, fused %s | %.3f | %.1f | %.3fx | %.3f..%.3f | %.3fx |\n",
              no_gather ? "x @ y (--no-gather)" : "x[index] @ y", exec.median,
              flops / exec.median * 1e-9, blas.median / exec.median, exec.min, exec.max,
              blas.min / exec.min);
  std::printf("| OpenBLAS sgemm, x @ y | %.3f | %.1f | 1x | %.3f..%.3f | 1x |\n", blas.median,
              flops / blas.median * 1e-9, blas.min, blas.max);
  std::printf("executor output vs sgemm(%s, y): rel. error %.2e\n", no_gather ? "x" : "x[index]",
              rel);
  return rel < 1e-5 ? 0 : 1;
}
