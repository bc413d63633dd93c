// The CUDA runtime layer: NVRTC compilation (runs wherever libnvrtc loads,
// CI included) and the driver-API device, memory, launch and events (skipped
// cleanly without a GPU).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <optional>
#include <string>
#include <vector>

#include "common/cuda.h"
#include "common/scoped_env.h"
#include "core/error.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/cuda/timing.h"

namespace tilefuse::cuda {
namespace {

const char* kVectorAdd = R"(
extern "C" __global__ void vadd(const float* __restrict__ a, const float* __restrict__ b,
                                float* __restrict__ c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)";

// A device-side index check in the style of the emitted kernels: an index out
// of [0, n) writes a status word (code, position, value) and the thread
// returns; there is no trap, so the context stays usable.
const char* kCheckedGather = R"(
extern "C" __global__ void gather(const float* __restrict__ x, const int* __restrict__ idx,
                                  float* __restrict__ out, int m, int n,
                                  unsigned long long* status) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  int k = idx[i];
  if (k < 0 || k >= n) {
    unsigned long long word = (1ull << 63) | ((unsigned long long)(unsigned)i << 32) |
                              (unsigned)k;
    atomicCAS(status, 0ull, word);  // the first error wins
    return;
  }
  out[i] = x[k];
}
)";

CompileOptions verbose(const std::string& arch) {
  CompileOptions o;
  o.arch = arch;
  o.extra = {"-Xptxas", "-v", "-std=c++17"};
  return o;
}

// The vector add under another kernel name. On the H200 machine, with libcuda
// loaded in the process, a second compile of a kernel whose PTX was already
// assembled came back with an empty log (no ptxas report), so each compile
// that checks the report compiles a kernel of its own, named per process.
std::string unique_name(const std::string& base) {
  return base + "_" + std::to_string(::getpid());
}

std::string renamed_vector_add(const std::string& name) {
  std::string src = kVectorAdd;
  src.replace(src.find("vadd"), 4, name);
  return src;
}

TEST(CudaNvrtc, CompilesVectorAddForSm80AndSm90a) {
  SKIP_WITHOUT_NVRTC();
  std::cout << "NVRTC " << nvrtc_version() << " at " << load_nvrtc()->libnvrtc_path << "\n";
  const std::string name = unique_name("vadd_report");
  for (const char* arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    CompiledKernel k = compile_cuda(renamed_vector_add(name), name, verbose(arch));
    ASSERT_FALSE(k.cubin.empty());
    // A cubin is an ELF image.
    ASSERT_GE(k.cubin.size(), 4u);
    EXPECT_EQ(std::string(k.cubin.data() + 1, 3), "ELF");
    ASSERT_TRUE(k.usage.present) << k.log;
    EXPECT_EQ(k.usage.function, name) << k.log;
    EXPECT_GT(k.usage.registers, 0) << k.log;
    EXPECT_EQ(k.usage.spill_store_bytes, 0) << k.log;
    EXPECT_EQ(k.usage.spill_load_bytes, 0) << k.log;
    EXPECT_EQ(k.usage.shared_bytes, 0) << k.log;
  }
}

TEST(CudaNvrtc, PtxasOptionSpellingsAndNoReportWithoutV) {
  SKIP_WITHOUT_NVRTC();
  const std::vector<std::vector<std::string>> spellings = {
      {"--ptxas-options=-v"}, {"-Xptxas=-v"}, {"-Xptxas", "-v"}, {"--ptxas-options", "-v"}};
  for (std::size_t i = 0; i < spellings.size(); ++i) {
    CompileOptions o;
    o.extra = spellings[i];
    const std::string name = unique_name("vadd_spelling" + std::to_string(i));
    CompiledKernel k = compile_cuda(renamed_vector_add(name), name, o);
    EXPECT_TRUE(k.usage.present) << spellings[i][0] << ": " << k.log;
    EXPECT_EQ(k.usage.function, name) << k.log;
  }
  CompiledKernel quiet = compile_cuda(renamed_vector_add("vadd_quiet"), "vadd_quiet", {});
  EXPECT_FALSE(quiet.usage.present) << quiet.log;
  EXPECT_FALSE(quiet.cubin.empty());
}

TEST(CudaNvrtc, ReportsSharedMemory) {
  SKIP_WITHOUT_NVRTC();
  const char* src = R"(
extern "C" __global__ void smem_user(float* out) {
  __shared__ float tile[1024];
  tile[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = tile[1023 - threadIdx.x];
}
)";
  const std::string name = unique_name("smem_user");
  std::string source = src;
  source.replace(source.find("smem_user"), 9, name);
  CompiledKernel k = compile_cuda(source, name, verbose("sm_80"));
  ASSERT_TRUE(k.usage.present) << k.log;
  EXPECT_EQ(k.usage.shared_bytes, 4096) << k.log;
}

TEST(CudaNvrtc, ParsesAPtxasReport) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'a' for 'sm_80'\n"
      "ptxas info    : Function properties for a\n"
      "    8 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads\n"
      "ptxas info    : Used 255 registers, 49152 bytes smem, 380 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'b' for 'sm_80'\n"
      "ptxas info    : Function properties for b\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 10 registers, 368 bytes cmem[0]\n";
  std::vector<PtxasUsage> u = parse_ptxas_report(log);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].function, "a");
  EXPECT_EQ(u[0].registers, 255);
  EXPECT_EQ(u[0].stack_frame_bytes, 8);
  EXPECT_EQ(u[0].spill_store_bytes, 12);
  EXPECT_EQ(u[0].spill_load_bytes, 16);
  EXPECT_EQ(u[0].shared_bytes, 49152);
  EXPECT_EQ(u[1].function, "b");
  EXPECT_EQ(u[1].registers, 10);
  EXPECT_EQ(u[1].shared_bytes, 0);
  EXPECT_TRUE(parse_ptxas_report("").empty());
}

TEST(CudaNvrtc, SyntaxErrorNamesTheSavedSourceAndQuotesTheLog) {
  SKIP_WITHOUT_NVRTC();
  const auto cache = std::filesystem::temp_directory_path() /
                     ("tilefuse-cudart-test-" + std::to_string(::getpid()));
  // The failed source goes to $XDG_CACHE_HOME/tilefuse/failed unless
  // TILEFUSE_CACHE_DIR names the cache (as scripts/gpu_check.sh does).
  std::optional<testing::ScopedEnv> no_dir(std::in_place, "TILEFUSE_CACHE_DIR", nullptr);
  std::optional<testing::ScopedEnv> xdg(std::in_place, "XDG_CACHE_HOME", cache.c_str());
  const std::string bad = "extern \"C\" __global__ void broken(float* p) { p[0] = 1.0f }\n";
  std::string message;
  try {
    compile_cuda(bad, "broken", verbose("sm_80"));
    ADD_FAILURE() << "a syntax error compiled";
  } catch (const UserError& e) {
    message = e.what();
  }
  xdg.reset();
  no_dir.reset();
  const std::string dir = (cache / "tilefuse" / "failed").string();
  const std::size_t at = message.find(dir + "/broken-");
  ASSERT_NE(at, std::string::npos) << message;
  const std::size_t end = message.find(".cu", at);
  ASSERT_NE(end, std::string::npos) << message;
  const std::string path = message.substr(at, end + 3 - at);
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_EQ(content.str(), bad);
  // The log line: NVRTC reports "<program>(line): error: expected a \";\"".
  EXPECT_NE(message.find("broken.cu(1): error"), std::string::npos) << message;
  EXPECT_NE(message.find("expected a \";\""), std::string::npos) << message;
  std::filesystem::remove_all(cache);
}

// Without HOME and with a TMPDIR that is no directory, the failed-source
// folder falls back to /tmp (temp_directory_path threw: an internal error).
TEST(CudaNvrtc, FailedSourceDirSurvivesABadTmpdir) {
  testing::ScopedEnv no_dir("TILEFUSE_CACHE_DIR", nullptr);
  testing::ScopedEnv no_xdg("XDG_CACHE_HOME", nullptr);
  testing::ScopedEnv no_home("HOME", nullptr);
  testing::ScopedEnv tmpdir("TMPDIR", "/nonexistent/tilefuse-test");
  std::string dir;
  EXPECT_NO_THROW(dir = failed_source_dir());
  EXPECT_EQ(dir, "/tmp/tilefuse-cache/failed");  // failed/ of default_cache_root()
}

// ---- GPU tests

TEST(CudaDevice, ReportsTheDevice) {
  SKIP_WITHOUT_GPU();
  Device dev;
  std::cout << dev.name() << ", " << dev.arch() << ", " << dev.sm_count() << " SMs, "
            << dev.total_memory() / (1024 * 1024) << " MiB\n";
  EXPECT_FALSE(dev.name().empty());
  EXPECT_GE(dev.cc_major(), 7);
  EXPECT_GT(dev.sm_count(), 0);
  EXPECT_GT(dev.total_memory(), 0u);
}

TEST(CudaDevice, VectorAddMatchesTheHost) {
  SKIP_WITHOUT_GPU();
  Device dev;
  CompiledKernel k = compile_cuda(kVectorAdd, "vadd", verbose(dev.arch()));
  Module mod(dev, k.cubin);
  Function f = mod.function("vadd");
  int n = 100003;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) a[i] = dist(rng), b[i] = dist(rng);
  DeviceBuffer da(dev, n * sizeof(float)), db(dev, n * sizeof(float)), dc(dev, n * sizeof(float));
  da.upload(a);
  db.upload(b);
  dc.memset(0xff);
  void* args[] = {&da.arg(), &db.arg(), &dc.arg(), &n};
  f.launch({static_cast<unsigned>((n + 255) / 256)}, {256}, 0, args);
  dev.synchronize();
  std::vector<float> c = dc.download<float>(n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "at " << i;
}

TEST(CudaDevice, StatusWordReportsAnErrorAndTheContextStaysUsable) {
  SKIP_WITHOUT_GPU();
  Device dev;
  CompiledKernel g = compile_cuda(kCheckedGather, "gather", verbose(dev.arch()));
  CompiledKernel v = compile_cuda(kVectorAdd, "vadd", verbose(dev.arch()));
  Module gmod(dev, g.cubin), vmod(dev, v.cubin);
  int m = 1000, n = 64;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i);
  std::vector<int> idx(m);
  for (int i = 0; i < m; ++i) idx[i] = i % n;
  idx[777] = 1234567;  // out of range
  DeviceBuffer dx(dev, n * sizeof(float)), didx(dev, m * sizeof(int)), dout(dev, m * sizeof(float)),
      status(dev, sizeof(std::uint64_t));
  dx.upload(x);
  didx.upload(idx);
  status.memset(0);
  void* gargs[] = {&dx.arg(), &didx.arg(), &dout.arg(), &m, &n, &status.arg()};
  gmod.function("gather").launch({(m + 127) / 128u}, {128}, 0, gargs);
  dev.synchronize();  // no fault: the kernel only wrote the status word
  std::uint64_t word = status.download<std::uint64_t>(1)[0];
  ASSERT_NE(word, 0u);
  EXPECT_EQ(word >> 63, 1u);
  EXPECT_EQ((word >> 32) & 0x7fffffffu, 777u);
  EXPECT_EQ(static_cast<int>(word & 0xffffffffu), 1234567);

  // Another launch in the same context succeeds.
  int len = 4096;
  std::vector<float> a(len, 1.5f), b(len, 2.25f);
  DeviceBuffer da(dev, len * sizeof(float)), db(dev, len * sizeof(float)),
      dc(dev, len * sizeof(float));
  da.upload(a);
  db.upload(b);
  void* vargs[] = {&da.arg(), &db.arg(), &dc.arg(), &len};
  vmod.function("vadd").launch({16}, {256}, 0, vargs);
  dev.synchronize();
  for (float c : dc.download<float>(len)) ASSERT_EQ(c, 3.75f);
  // The checked kernel runs again, now with every index in range.
  idx[777] = 5;
  didx.upload(idx);
  status.memset(0);
  gmod.function("gather").launch({(m + 127) / 128u}, {128}, 0, gargs);
  dev.synchronize();
  EXPECT_EQ(status.download<std::uint64_t>(1)[0], 0u);
  std::vector<float> out = dout.download<float>(m);
  for (int i = 0; i < m; ++i) ASSERT_EQ(out[i], i == 777 ? 5.0f : float(i % n)) << i;
}

TEST(CudaDevice, EventTimingIsPositive) {
  SKIP_WITHOUT_GPU();
  Device dev;
  CompiledKernel k = compile_cuda(kVectorAdd, "vadd", verbose(dev.arch()));
  Module mod(dev, k.cubin);
  Function f = mod.function("vadd");
  int n = 1 << 24;
  DeviceBuffer da(dev, n * sizeof(float)), db(dev, n * sizeof(float)), dc(dev, n * sizeof(float));
  da.memset(0);
  db.memset(0);
  void* args[] = {&da.arg(), &db.arg(), &dc.arg(), &n};
  Event start(dev), stop(dev);
  start.record();
  for (int r = 0; r < 10; ++r) f.launch({static_cast<unsigned>(n / 256)}, {256}, 0, args);
  stop.record();
  float ms = stop.elapsed_ms_since(start);
  std::cout << "10 x vadd of 2^24 floats: " << ms << " ms\n";
  EXPECT_GT(ms, 0.0f);
}

// The copy bandwidth bench compares its rows with (issue 12): a real rate
// (between 10 GB/s and 100 TB/s: every GPU tilefuse runs on is inside,
// HBM3e is ~5 TB/s), the repeats asked for, and a clear error for no bytes.
TEST(CudaDevice, CopyBandwidthIsMeasured) {
  SKIP_WITHOUT_GPU();
  Device dev;
  TimingOptions t;
  t.warmup = 2;
  t.repeats = 5;
  const CopyBandwidth bw = measure_copy_bandwidth(dev, std::size_t{256} << 20, t);
  std::cout << "256 MiB device-to-device copy: " << bw.timing.median_ms << " ms, " << bw.gbps
            << " GB/s\n";
  EXPECT_EQ(bw.bytes, std::size_t{256} << 20);
  EXPECT_EQ(bw.timing.repeats, 5);
  EXPECT_GT(bw.gbps, 10.0);
  EXPECT_LT(bw.gbps, 100000.0);
  EXPECT_NEAR(bw.gbps, 2.0 * bw.bytes / (bw.timing.median_ms * 1e-3) / 1e9, 1e-6 * bw.gbps);
  EXPECT_THROW(measure_copy_bandwidth(dev, 0, t), UserError);
}

TEST(CudaDevice, ErrorsNameTheFailingCall) {
  SKIP_WITHOUT_GPU();
  Device dev;
  CompiledKernel k = compile_cuda(kVectorAdd, "vadd", verbose(dev.arch()));
  Module mod(dev, k.cubin);
  try {
    mod.function("no_such_kernel");
    ADD_FAILURE() << "found a missing kernel";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("cuModuleGetFunction(\"no_such_kernel\")"),
              std::string::npos)
        << e.what();
  }
  // Too many threads per block: the launch fails, naming the kernel.
  Function f = mod.function("vadd");
  int n = 1;
  DeviceBuffer d(dev, 16);
  void* args[] = {&d.arg(), &d.arg(), &d.arg(), &n};
  try {
    f.launch({1}, {4096}, 0, args);
    ADD_FAILURE() << "a 4096-thread block launched";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("cuLaunchKernel(vadd)"), std::string::npos) << e.what();
  }
  dev.synchronize();  // still usable
}

// A call the caller's CUDA graph capture forbids (a launch on the legacy
// stream while a blocking stream captures, one into an invalidated capture)
// is the caller's error, not an internal one. Needs no GPU: the codes alone.
TEST(CudaDevice, CaptureErrorsAreTheCallersErrors) {
  const CudaLibraries none;  // no cuGetErrorString: the code is named by number
  for (const CUresult rc : {900, 901, 906}) {
    try {
      check_cuda(none, rc, "cuLaunchKernel(k)");
      ADD_FAILURE() << rc << " passed";
    } catch (const InternalError& e) {
      ADD_FAILURE() << rc << " is an internal error: " << e.what();
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()),
                "cuLaunchKernel(k) failed: unknown CUDA error " + std::to_string(rc));
    }
  }
  EXPECT_THROW(check_cuda(none, 999, "cuLaunchKernel(k)"), InternalError);  // CUDA_ERROR_UNKNOWN
  EXPECT_NO_THROW(check_cuda(none, kCudaSuccess, "cuLaunchKernel(k)"));
}

TEST(CudaDevice, WithoutAGpuTheDeviceSaysWhy) {
  std::string why;
  if (cuda_available(&why)) GTEST_SKIP() << "a GPU is present";
  try {
    Device dev;
    ADD_FAILURE() << "opened a device without CUDA";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tilefuse::cuda
