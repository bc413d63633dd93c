// The cuBLASLt baseline and the benchmark timing utilities.
//
// Runs everywhere: the libcublasLt search (fake environments), the load of
// the installed library when there is one, and time_on_host. Needs a GPU
// (skipped cleanly without one, or without libcublasLt): cuBLASLt f16 / bf16
// / f32 GEMMs against a host f64 reference, strided batches, autotuning, and
// time_on_device on a 2048^3 f16 GEMM.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/cuda.h"
#include "core/dtype.h"
#include "core/error.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/timing.h"

namespace tilefuse::cuda {
namespace {

using testing::fake_env;
using testing::libm_path;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

#define SKIP_WITHOUT_GPU_OR_CUBLASLT()                    \
  do {                                                    \
    std::string why_;                                     \
    if (!cuda_available(&why_)) GTEST_SKIP() << why_;     \
    if (!cublaslt_available(&why_)) GTEST_SKIP() << why_; \
  } while (0)

// ---- Loader (no GPU needed)

TEST(CublasLtLoader, CandidatesFollowTheDocumentedOrder) {
  EXPECT_STREQ(override_variable(Library::kCublasLt), "TILEFUSE_LIBCUBLASLT");
  EXPECT_STREQ(library_name(Library::kCublasLt), "libcublasLt");
  const std::vector<std::string> c =
      candidate_paths(Library::kCublasLt, fake_env({{"CUDA_HOME", "/opt/cuda/"}}));
  ASSERT_GE(c.size(), 4u);
  EXPECT_EQ(c[0], "/opt/cuda/lib64/libcublasLt.so.13");
  EXPECT_EQ(c[1], "/opt/cuda/lib64/libcublasLt.so.12");
  EXPECT_EQ(c[2], "/opt/cuda/targets/x86_64-linux/lib/libcublasLt.so.13");
  auto pos = [&](const std::string& p) { return std::find(c.begin(), c.end(), p) - c.begin(); };
  const auto n = static_cast<std::ptrdiff_t>(c.size());
  EXPECT_LT(pos("/opt/cuda/lib/libcublasLt.so.12"), pos("/usr/local/cuda/lib64/libcublasLt.so.13"));
  EXPECT_LT(pos("/usr/local/cuda/lib64/libcublasLt.so.13"),
            pos("/usr/local/cuda/targets/x86_64-linux/lib/libcublasLt.so.13"));
  EXPECT_LT(pos("/usr/local/cuda/targets/x86_64-linux/lib/libcublasLt.so.13"),
            pos("/usr/lib/x86_64-linux-gnu/libcublasLt.so.13"));
  EXPECT_EQ(c[n - 2], "libcublasLt.so.13");
  EXPECT_EQ(c[n - 1], "libcublasLt.so.12");
  // The other libraries' lists are unchanged by the new entry.
  EXPECT_EQ(candidate_paths(Library::kNvrtc, fake_env({})).back(), "libnvrtc.so.12");
  EXPECT_EQ(candidate_paths(Library::kCuda, fake_env({})).back(), "libcuda.so.1");
}

TEST(CublasLtLoader, MissingOverrideIsNamedAndAuthoritative) {
  std::string why;
  const std::string missing = "/nonexistent/tilefuse/libcublasLt.so.13";
  EXPECT_EQ(open_cublaslt(fake_env({{"TILEFUSE_LIBCUBLASLT", missing}}), &why), nullptr);
  EXPECT_TRUE(contains(why, "Could not load the cuBLASLt library (libcublasLt)")) << why;
  EXPECT_TRUE(contains(why, missing + " (no such file)")) << why;
  EXPECT_TRUE(contains(why, "TILEFUSE_LIBCUBLASLT")) << why;
  // Only the override was tried, even where a real one is installed.
  EXPECT_FALSE(contains(why, "/usr/local/cuda")) << why;
}

TEST(CublasLtLoader, NonCublasLibraryNamesTheMissingSymbol) {
  const std::string libm = libm_path();
  std::string why;
  EXPECT_EQ(open_cublaslt(fake_env({{"TILEFUSE_LIBCUBLASLT", libm}}), &why), nullptr);
  EXPECT_TRUE(contains(why, "libcublasLt at " + libm)) << why;
  EXPECT_TRUE(contains(why, "lacks the symbol cublasLtCreate")) << why;
  EXPECT_TRUE(contains(why, "cublasLtMatmul")) << why;
}

// On this development machine libcublasLt is in /usr/local/cuda/lib64 (no
// GPU); on the H200 machine in /usr/local/cuda-13.0/targets/x86_64-linux/lib.
TEST(CublasLtLoader, FindsTheInstalledLibraryAndResolvesEverySymbol) {
  std::string why;
  std::unique_ptr<CublasLtLibrary> lib = open_cublaslt(process_env(), &why);
  if (lib == nullptr) GTEST_SKIP() << "libcublasLt is not installed here: " << why;
  EXPECT_TRUE(why.empty()) << why;
  EXPECT_FALSE(lib->path.empty());
  EXPECT_NE(lib->handle, nullptr);
  EXPECT_NE(lib->cublasLtCreate, nullptr);
  EXPECT_NE(lib->cublasLtDestroy, nullptr);
  EXPECT_NE(lib->cublasLtGetVersion, nullptr);
  EXPECT_NE(lib->cublasLtGetStatusString, nullptr);
  EXPECT_NE(lib->cublasLtMatmulDescCreate, nullptr);
  EXPECT_NE(lib->cublasLtMatmulDescDestroy, nullptr);
  EXPECT_NE(lib->cublasLtMatmulDescSetAttribute, nullptr);
  EXPECT_NE(lib->cublasLtMatrixLayoutCreate, nullptr);
  EXPECT_NE(lib->cublasLtMatrixLayoutDestroy, nullptr);
  EXPECT_NE(lib->cublasLtMatrixLayoutSetAttribute, nullptr);
  EXPECT_NE(lib->cublasLtMatmulPreferenceCreate, nullptr);
  EXPECT_NE(lib->cublasLtMatmulPreferenceDestroy, nullptr);
  EXPECT_NE(lib->cublasLtMatmulPreferenceSetAttribute, nullptr);
  EXPECT_NE(lib->cublasLtMatmulAlgoGetHeuristic, nullptr);
  EXPECT_NE(lib->cublasLtMatmul, nullptr);
  // Version: major*10000 + minor*100 + patch; the supported sonames are 12 and 13.
  const std::size_t v = lib->cublasLtGetVersion();
  EXPECT_GE(v, 120000u);
  EXPECT_LT(v, 140000u);
  // A status string needs no GPU. 15 = CUBLAS_STATUS_NOT_SUPPORTED.
  const char* s = lib->cublasLtGetStatusString(15);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(contains(s, "not supported") || contains(s, "NOT_SUPPORTED")) << s;
  std::cout << "libcublasLt " << v << " at " << lib->path << "\n";
}

TEST(CublasLtLoader, AvailabilityIsConsistentAndLoadedOnce) {
  std::string why;
  const bool available = cublaslt_available(&why);
  EXPECT_EQ(available, why.empty()) << why;
  const CublasLtLibrary* lib = load_cublaslt();
  EXPECT_EQ(lib != nullptr, available);
  EXPECT_EQ(load_cublaslt(), lib);
  if (available) {
    EXPECT_FALSE(cublaslt_version().empty());
  } else {
    EXPECT_TRUE(contains(why, "libcublasLt")) << why;
    EXPECT_EQ(cublaslt_version(), "");
  }
}

// The descriptors are host-side objects: every attribute the GEMM sets is
// checked by the real library here (a wrong attribute id or value size is
// CUBLAS_STATUS_INVALID_VALUE, an InternalError).
TEST(CublasLtDescriptors, BuildForEveryDtypeAndBatchingWithoutAGpu) {
  std::string why;
  if (!cublaslt_available(&why)) GTEST_SKIP() << why;
  GemmProblem p{.m = 333, .n = 250, .k = 1000};
  for (DType dt : {DType::F16, DType::BF16, DType::F32}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    const GemmProblem full = validate_cublaslt_problem(dt, p);
    EXPECT_EQ(full.stride_a, 333 * 1000);
    EXPECT_EQ(full.stride_b, 1000 * 250);
    EXPECT_EQ(full.stride_c, 333 * 250);
    GemmProblem batched = p;
    batched.batch = 5;
    batched.stride_b = 0;  // one B for every batch
    const GemmProblem bfull = validate_cublaslt_problem(dt, batched);
    EXPECT_EQ(bfull.stride_b, 0);
    EXPECT_EQ(bfull.stride_a, 333 * 1000);
  }
  CublasLtOptions tf32;
  tf32.allow_tf32 = true;
  tf32.workspace_bytes = 0;
  tf32.alignment_bytes = 4;
  EXPECT_NO_THROW(validate_cublaslt_problem(DType::F32, p, tf32));
}

TEST(CublasLtDescriptors, RejectsWhatItCannotRunWithoutAGpu) {
  std::string why;
  if (!cublaslt_available(&why)) GTEST_SKIP() << why;
  GemmProblem p{.m = 4, .n = 4, .k = 0};
  EXPECT_THROW(validate_cublaslt_problem(DType::F16, p), UserError);
  p.k = 4;
  EXPECT_NO_THROW(validate_cublaslt_problem(DType::F16, p));
  EXPECT_THROW(validate_cublaslt_problem(DType::I32, p), UserError);
  EXPECT_THROW(validate_cublaslt_problem(DType::F64, p), UserError);
  GemmProblem broadcast_c = p;
  broadcast_c.batch = 2;
  broadcast_c.stride_c = 0;
  EXPECT_THROW(validate_cublaslt_problem(DType::F16, broadcast_c), UserError);
  CublasLtOptions none;
  none.algorithms = 0;
  EXPECT_THROW(validate_cublaslt_problem(DType::F16, p, none), UserError);
  CublasLtOptions odd;
  odd.alignment_bytes = 24;
  EXPECT_THROW(validate_cublaslt_problem(DType::F16, p, odd), UserError);
}

// ---- Host timing (no GPU needed)

TEST(HostTiming, SummarizeSamples) {
  Timing odd = summarize_samples({3.0, 1.0, 2.0});
  EXPECT_EQ(odd.repeats, 3);
  EXPECT_DOUBLE_EQ(odd.median_ms, 2.0);
  EXPECT_DOUBLE_EQ(odd.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(odd.max_ms, 3.0);
  EXPECT_DOUBLE_EQ(odd.mean_ms, 2.0);
  Timing even = summarize_samples({4.0, 1.0, 2.0, 10.0});
  EXPECT_DOUBLE_EQ(even.median_ms, 3.0);
  EXPECT_DOUBLE_EQ(even.mean_ms, 4.25);
  Timing one = summarize_samples({0.5});
  EXPECT_DOUBLE_EQ(one.median_ms, 0.5);
  EXPECT_EQ(one.repeats, 1);
  EXPECT_THROW(summarize_samples({}), InternalError);
}

// time_interleaved_on_device's rounds: forward in even rounds, backward in
// odd ones, so that no launch always follows the same one.
TEST(HostTiming, InterleavedOrderAlternates) {
  EXPECT_EQ(interleaved_order(0, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(interleaved_order(1, 3), (std::vector<int>{2, 1, 0}));
  EXPECT_EQ(interleaved_order(6, 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(interleaved_order(7, 1), (std::vector<int>{0}));
  EXPECT_TRUE(interleaved_order(3, 0).empty());
}

TEST(HostTiming, SleepStatistics) {
  int calls = 0;
  TimingOptions opts;
  opts.warmup = 2;
  opts.repeats = 9;
  opts.flush_l2 = false;
  const Timing t = time_on_host(
      [&] {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      },
      opts);
  EXPECT_EQ(calls, 11);  // warm-up included
  EXPECT_EQ(t.repeats, 9);
  EXPECT_GE(t.min_ms, 2.0);  // sleep_for sleeps at least that long
  EXPECT_LE(t.min_ms, t.median_ms);
  EXPECT_LE(t.median_ms, t.max_ms);
  EXPECT_GE(t.mean_ms, t.min_ms);
  EXPECT_LE(t.mean_ms, t.max_ms);
  EXPECT_LT(t.median_ms, 200.0);  // generous bound for a loaded machine
  std::cout << "sleep(2 ms): median " << t.median_ms << " ms, min " << t.min_ms << ", max "
            << t.max_ms << "\n";
}

TEST(HostTiming, FlushIsOutsideTheTimedRegion) {
  TimingOptions opts;
  opts.warmup = 0;
  opts.repeats = 5;
  opts.flush_l2 = true;
  EXPECT_GE(host_flush_bytes(), std::size_t{32} << 20);
  int calls = 0;
  const Timing t = time_on_host([&] { ++calls; }, opts);
  EXPECT_EQ(calls, 5);
  // Writing >= 32 MiB takes milliseconds; an empty call takes microseconds.
  EXPECT_LT(t.median_ms, 1.0);
}

TEST(HostTiming, RejectsBadCounts) {
  TimingOptions opts;
  opts.repeats = 0;
  EXPECT_THROW(time_on_host([] {}, opts), UserError);
  opts.repeats = 1;
  opts.warmup = -1;
  EXPECT_THROW(time_on_host([] {}, opts), UserError);
}

// ---- GPU: cuBLASLt GEMMs against a host f64 reference

std::uint64_t fresh_seed() {
  return std::random_device{}() ^
         static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

// `count` values uniform in [-1, 1), never zero, rounded to `dtype`; stored
// as that dtype's bytes in `bytes` and as doubles in `values`.
void random_matrix(DType dtype, std::size_t count, std::mt19937_64& rng,
                   std::vector<unsigned char>* bytes, std::vector<double>* values) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int size = dtype_size(dtype);
  bytes->assign(count * size, 0);
  values->resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    float f = 0.0f;
    while (f == 0.0f || std::fabs(f) < 1e-3f) f = dist(rng);
    if (dtype == DType::F16) {
      const std::uint16_t h = f32_to_f16_bits(f);
      std::memcpy(bytes->data() + i * size, &h, 2);
      (*values)[i] = f16_bits_to_f32(h);
    } else if (dtype == DType::BF16) {
      const std::uint16_t h = f32_to_bf16_bits(f);
      std::memcpy(bytes->data() + i * size, &h, 2);
      (*values)[i] = bf16_bits_to_f32(h);
    } else {
      std::memcpy(bytes->data() + i * size, &f, 4);
      (*values)[i] = f;
    }
  }
}

std::vector<double> decode(DType dtype, const std::vector<unsigned char>& bytes) {
  const int size = dtype_size(dtype);
  std::vector<double> out(bytes.size() / size);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (dtype == DType::F32) {
      float f;
      std::memcpy(&f, bytes.data() + i * size, 4);
      out[i] = f;
    } else {
      std::uint16_t h;
      std::memcpy(&h, bytes.data() + i * size, 2);
      out[i] = dtype == DType::F16 ? f16_bits_to_f32(h) : bf16_bits_to_f32(h);
    }
  }
  return out;
}

double tolerance(DType dtype) {
  return dtype == DType::F32 ? 1e-5 : 1e-2;
}

// Runs `problem` (strides as given, -1 packed) through cuBLASLt on fresh
// random inputs with a poisoned output and returns ||out - ref|| / ||ref||
// over every batch (NaN if any output element is not finite).
// With `algorithm` > 0 the heuristic's candidate of that index is used
// (options.algorithms must ask for enough); -1 when there is no such one.
double gemm_error(const Device& device, DType dtype, GemmProblem problem,
                  const CublasLtOptions& options = {}, int algorithm = 0) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  CublasLtGemm gemm(device, dtype, problem, options);
  if (algorithm >= gemm.algorithm_count()) return -1.0;
  gemm.select_algorithm(algorithm);
  const GemmProblem& p = gemm.problem();  // strides filled in
  const std::int64_t m = p.m, n = p.n, k = p.k;
  // Elements each operand spans over all batches.
  auto span = [&](std::int64_t stride, std::int64_t one) {
    return static_cast<std::size_t>(stride * (p.batch - 1) + one);
  };
  const std::size_t a_count = span(p.stride_a, m * k), b_count = span(p.stride_b, k * n),
                    c_count = span(p.stride_c, m * n);
  std::vector<unsigned char> a_bytes, b_bytes;
  std::vector<double> a, b;
  random_matrix(dtype, a_count, rng, &a_bytes, &a);
  random_matrix(dtype, b_count, rng, &b_bytes, &b);
  const int size = dtype_size(dtype);
  DeviceBuffer da(device, a_bytes.size()), db(device, b_bytes.size()), dc(device, c_count * size);
  da.upload(a_bytes);
  db.upload(b_bytes);
  dc.memset(0xFF);  // NaN in f16, bf16 and f32: an element not written shows
  gemm.run(da.ptr(), db.ptr(), dc.ptr());
  device.synchronize();
  const std::vector<double> c = decode(dtype, dc.download<unsigned char>(c_count * size));

  double diff2 = 0.0, ref2 = 0.0;
  for (int bi = 0; bi < p.batch; ++bi) {
    const double* ab = a.data() + bi * p.stride_a;
    const double* bb = b.data() + bi * p.stride_b;
    const double* cb = c.data() + bi * p.stride_c;
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (std::int64_t kk = 0; kk < k; ++kk) acc += ab[i * k + kk] * bb[kk * n + j];
        const double out = cb[i * n + j];
        if (!std::isfinite(out)) return std::nan("");
        diff2 += (out - acc) * (out - acc);
        ref2 += acc * acc;
      }
    }
  }
  return std::sqrt(diff2 / ref2);
}

struct Shape {
  std::int64_t m, n, k;
};

// M x N x K; both orientations of 333/250/1000, a skinny one, the smallest.
const Shape kShapes[] = {{333, 250, 1000}, {333, 1000, 250}, {64, 4096, 128},
                         {1, 1, 1},        {128, 128, 128},  {7, 3, 5}};

void check_shapes(DType dtype) {
  Device device;
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(std::string(dtype_name(dtype)) + " M=" + std::to_string(s.m) +
                 " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k));
    GemmProblem p{.m = s.m, .n = s.n, .k = s.k};
    const double err = gemm_error(device, dtype, p);
    EXPECT_LE(err, tolerance(dtype));  // false for NaN
    std::cout << dtype_name(dtype) << " " << s.m << "x" << s.n << "x" << s.k
              << ": rel. Frobenius error " << err << "\n";
  }
}

TEST(CublasLtGemm, F16MatchesTheF64Reference) {
  SKIP_WITHOUT_GPU_OR_CUBLASLT();
  check_shapes(DType::F16);
}

TEST(CublasLtGemm, Bf16MatchesTheF64Reference) {
  SKIP_WITHOUT_GPU_OR_CUBLASLT();
  check_shapes(DType::BF16);
}

TEST(CublasLtGemm, F32MatchesTheF64ReferenceWithoutTf32) {
  SKIP_WITHOUT_GPU_OR_CUBLASLT();
  check_shapes(DType::F32);
}

TEST(CublasLtGemm, StridedBatches) {
  SKIP_WITHOUT_GPU_OR_CUBLASLT();
  Device device;
  // Packed batches, 16-byte aligned strides.
  GemmProblem packed{.m = 40, .n = 48, .k = 24, .batch = 3};
  EXPECT_LE(gemm_error(device, DType::F16, packed), 1e-2);
  // One B for every batch (stride 0), as a shared weight.
  GemmProblem shared_b = packed;
  shared_b.stride_b = 0;
  EXPECT_LE(gemm_error(device, DType::BF16, shared_b), 1e-2);
  // Odd sizes: batch strides of 1073 / 1305 / 1665 floats (4-byte aligned).
  GemmProblem odd{.m = 37, .n = 45, .k = 29, .batch = 4};
  EXPECT_LE(gemm_error(device, DType::F32, odd), 1e-5);
}

TEST(CublasLtGemm, AutotuneSelectsTheFastestCandidate) {
  SKIP_WITHOUT_GPU_OR_CUBLASLT();
  Device device;
  GemmProblem p{.m = 1024, .n = 1024, .k = 1024};
  CublasLtOptions options;
  options.algorithms = 4;
  CublasLtGemm gemm(device, DType::F16, p, options);
  ASSERT_GE(gemm.algorithm_count(), 1);
  ASSERT_LE(gemm.algorithm_count(), 4);
  EXPECT_EQ(gemm.selected_algorithm(), 0);
  const std::size_t bytes = 1024 * 1024 * 2;
  DeviceBuffer a(device, bytes), b(device, bytes), c(device, bytes);
  a.memset(0x3C);  // every element 0x3C3C: f16 1.05859375
  b.memset(0x3C);
  TimingOptions topts;
  topts.warmup = 3;
  topts.repeats = 10;
  const std::vector<Timing> timings = gemm.autotune(a.ptr(), b.ptr(), c.ptr(), topts);
  ASSERT_EQ(static_cast<int>(timings.size()), gemm.algorithm_count());
  for (const Timing& t : timings) {
    EXPECT_LE(timings[gemm.selected_algorithm()].median_ms, t.median_ms);
  }
  EXPECT_LE(gemm.selected_workspace_bytes(), options.workspace_bytes);
  std::cout << gemm.describe() << ": median " << timings[gemm.selected_algorithm()].median_ms * 1e3
            << " us\n";
  // The autotuned algorithm computed the product: every element is
  // K * v^2 (v the f16 value of 0x3C3C), within f16 rounding.
  device.synchronize();
  const double v = f16_bits_to_f32(0x3C3C);
  const double expected = 1024.0 * v * v;
  const std::vector<std::uint16_t> out = c.download<std::uint16_t>(1024 * 1024);
  int wrong = 0;
  for (std::uint16_t h : out) {
    if (!(std::fabs(f16_bits_to_f32(h) - expected) <= 1e-2 * expected)) ++wrong;
  }
  EXPECT_EQ(wrong, 0) << "expected " << expected;
  // Every candidate of the heuristic is correct on an odd-sized problem.
  GemmProblem small{.m = 96, .n = 80, .k = 72};
  for (int i = 0; i < options.algorithms; ++i) {
    SCOPED_TRACE("algorithm " + std::to_string(i));
    const double err = gemm_error(device, DType::F16, small, options, i);
    if (err < 0) break;  // the heuristic returned fewer
    EXPECT_LE(err, 1e-2);
  }
}

TEST(CublasLtGemm, RejectsWhatItCannotRun) {
  SKIP_WITHOUT_GPU_OR_CUBLASLT();
  Device device;
  GemmProblem p{.m = 4, .n = 4, .k = 0};
  EXPECT_THROW(CublasLtGemm(device, DType::F16, p), UserError);
  p.k = 4;
  EXPECT_THROW(CublasLtGemm(device, DType::I32, p), UserError);
  GemmProblem broadcast_c = p;
  broadcast_c.batch = 2;
  broadcast_c.stride_c = 0;
  EXPECT_THROW(CublasLtGemm(device, DType::F16, broadcast_c), UserError);
  CublasLtGemm gemm(device, DType::F16, p);
  DeviceBuffer buf(device, 1024);
  EXPECT_THROW(gemm.run(buf.ptr() + 2, buf.ptr(), buf.ptr() + 512), UserError);  // misaligned A
  EXPECT_THROW(gemm.select_algorithm(gemm.algorithm_count()), UserError);
}

// ---- GPU: device timing

TEST(DeviceTiming, MemsetStatistics) {
  std::string why;
  if (!cuda_available(&why)) GTEST_SKIP() << why;
  Device device;
  EXPECT_GE(l2_flush_bytes(device), std::size_t{256} << 20);
  DeviceBuffer buf(device, std::size_t{64} << 20);
  int calls = 0;
  TimingOptions opts;
  opts.warmup = 2;
  opts.repeats = 20;
  opts.warmup_ms = 0;  // exactly warmup + repeats calls
  const Timing t = time_on_device(
      device,
      [&] {
        ++calls;
        buf.memset(static_cast<unsigned char>(calls));
      },
      opts);
  EXPECT_EQ(calls, 22);
  EXPECT_EQ(t.repeats, 20);
  EXPECT_GT(t.median_ms, 0.0);
  EXPECT_LE(t.min_ms, t.median_ms);
  EXPECT_LE(t.median_ms, t.max_ms);
  std::cout << "memset 64 MiB: median " << t.median_ms * 1e3 << " us ("
            << (64.0 * (1 << 20)) / (t.median_ms * 1e-3) / 1e12 << " TB/s)\n";
}

// Interleaved timing: each launch called warmup + repeats times, the rounds
// alternating in order, each launch timed by its own events (a 256 MiB
// memset takes far longer than an 8 MiB one in the same rounds).
TEST(DeviceTiming, InterleavedTimesEachLaunchByItsOwnEvents) {
  std::string why;
  if (!cuda_available(&why)) GTEST_SKIP() << why;
  Device device;
  DeviceBuffer big(device, std::size_t{256} << 20), small(device, std::size_t{8} << 20);
  std::vector<int> order;
  TimingOptions opts;
  opts.warmup = 1;
  opts.repeats = 40;
  opts.warmup_ms = 0;  // exactly warmup + repeats rounds
  const std::vector<Timing> t = time_interleaved_on_device(device,
                                                           {[&] {
                                                              order.push_back(0);
                                                              big.memset(1);
                                                            },
                                                            [&] {
                                                              order.push_back(1);
                                                              small.memset(2);
                                                            }},
                                                           opts);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].repeats, 40);
  EXPECT_EQ(t[1].repeats, 40);
  ASSERT_EQ(order.size(), 82u);
  // The warm-up round forward, then timed round r forward (even r) or backward.
  EXPECT_EQ(order[0], 0);
  EXPECT_EQ(order[1], 1);
  for (int r = 0; r < 40; ++r) EXPECT_EQ(order[2 + 2 * r], r % 2 == 0 ? 0 : 1) << r;
  // 32 times the bytes: the big memset's median is far above the small one's.
  EXPECT_GT(t[0].median_ms, 4 * t[1].median_ms);
  EXPECT_GT(t[1].median_ms, 0.0);
  std::cout << "memset 256 MiB / 8 MiB in alternation: " << t[0].median_ms * 1e3 << " / "
            << t[1].median_ms * 1e3 << " us\n";
  EXPECT_THROW(time_interleaved_on_device(device, {}, opts), InternalError);
}

// The flush happens before the start event: timing nothing between the
// events gives microseconds although each flush writes >= 256 MiB (>= 56 us
// at the H200's 4.8 TB/s peak).
TEST(DeviceTiming, FlushIsNotTimed) {
  std::string why;
  if (!cuda_available(&why)) GTEST_SKIP() << why;
  Device device;
  TimingOptions opts;
  opts.warmup = 1;
  opts.repeats = 30;
  const Timing flushed = time_on_device(
      device, [] {}, opts);
  EXPECT_GE(flushed.min_ms, 0.0);
  EXPECT_LT(flushed.median_ms, 0.015);
  std::cout << "empty, L2 flushed with " << (l2_flush_bytes(device) >> 20) << " MiB: median "
            << flushed.median_ms * 1e3 << " us\n";
}

TEST(CublasLtTiming, F16Gemm2048Cubed) {
  SKIP_WITHOUT_GPU_OR_CUBLASLT();
  Device device;
  GemmProblem p{.m = 2048, .n = 2048, .k = 2048};
  CublasLtGemm gemm(device, DType::F16, p);
  const std::size_t bytes = std::size_t{2048} * 2048 * 2;
  DeviceBuffer a(device, bytes), b(device, bytes), c(device, bytes);
  std::mt19937_64 rng(fresh_seed());
  std::vector<unsigned char> a_bytes, b_bytes;
  std::vector<double> unused;
  random_matrix(DType::F16, 2048 * 2048, rng, &a_bytes, &unused);
  random_matrix(DType::F16, 2048 * 2048, rng, &b_bytes, &unused);
  a.upload(a_bytes);
  b.upload(b_bytes);
  const Timing t = time_on_device(device, [&] { gemm.run(a.ptr(), b.ptr(), c.ptr()); });
  EXPECT_EQ(t.repeats, 100);
  EXPECT_GT(t.median_ms, 0.0);
  EXPECT_LE(t.min_ms, t.median_ms);
  EXPECT_LE(t.median_ms, t.max_ms);
  const double tflops = 2.0 * 2048.0 * 2048.0 * 2048.0 / (t.median_ms * 1e-3) / 1e12;
  std::cout << gemm.describe() << " on " << device.name() << ": median " << t.median_ms * 1e3
            << " us (min " << t.min_ms * 1e3 << ", max " << t.max_ms * 1e3 << "), " << tflops
            << " TFLOP/s; L2 flushed with " << (l2_flush_bytes(device) >> 20) << " MiB\n";
}

}  // namespace
}  // namespace tilefuse::cuda
