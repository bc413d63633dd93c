// driver::Callable on device memory (what the C API and the Python package
// run): a parameter returned as is in its own layout, and a call whose
// kernels fail to load. Skipped without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "common/scoped_env.h"
#include "driver/callable.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "gpu_test_util.h"
#include "runtime/cuda/device.h"
#include "tir/target.h"

namespace tilefuse::driver {
namespace {

void* device_ptr(const cuda::DeviceBuffer& b) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(b.ptr()));
}

CallTensor cuda_tensor(void* data, Shape shape, std::vector<int64_t> strides = {}) {
  CallTensor t;
  t.device = DeviceKind::kCuda;
  t.device_id = 0;
  t.data = data;
  t.dtype = DType::F32;
  t.strides = strides.empty() ? contiguous_strides(shape) : std::move(strides);
  t.shape = std::move(shape);
  return t;
}

// A parameter returned as is is no kernel's output: launch(DeviceCall)
// copies it. The copy was a byte copy from the input's first element, so a
// transposed input came back in memory order (out[r][c] = mem[r * 8 + c],
// not x[r][c] = mem[c * 4 + r]) and a broadcast one (stride 0) was read
// 128 bytes from a 32-byte buffer. The program's kernel (x * 2.0) read x
// right all along.
TEST(GpuCallable, AStridedParameterReturnedAsIsKeepsItsLayout) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = cuda_device(0);
  CallableOptions o;
  o.tuning = false;
  Callable c("def f(x: f32[4, 8]):\n    return x, x * 2.0\n", "f.tfs", o);
  std::vector<float> mem(32);
  for (int i = 0; i < 32; ++i) mem[static_cast<size_t>(i)] = static_cast<float>(i);
  cuda::DeviceBuffer din(dev, 32 * 4), dout(dev, 32 * 4), dtwice(dev, 32 * 4);
  din.upload(mem);
  CallContext ctx;
  ctx.sync = true;
  struct Layout {
    const char* name;
    std::vector<int64_t> strides;
  };
  for (const Layout& l : {Layout{"contiguous", {8, 1}}, Layout{"transposed", {1, 4}},
                          Layout{"broadcast rows", {0, 1}}, Layout{"broadcast columns", {1, 0}}}) {
    SCOPED_TRACE(l.name);
    dout.memset(0xFF);
    dtwice.memset(0xFF);
    ASSERT_NO_THROW(c.call(
        {cuda_tensor(device_ptr(din), {4, 8}, l.strides)},
        {cuda_tensor(device_ptr(dout), {4, 8}), cuda_tensor(device_ptr(dtwice), {4, 8})}, ctx));
    const std::vector<float> out = dout.download<float>(32), twice = dtwice.download<float>(32);
    for (int r = 0; r < 4; ++r)
      for (int col = 0; col < 8; ++col) {
        const float x = mem[static_cast<size_t>(r * l.strides[0] + col * l.strides[1])];
        EXPECT_EQ(out[static_cast<size_t>(r * 8 + col)], x) << "out0[" << r << ", " << col << "]";
        EXPECT_EQ(twice[static_cast<size_t>(r * 8 + col)], 2 * x)
            << "out1[" << r << ", " << col << "]";
      }
  }
}

// A fixed f16 GEMM called on views of varying pitch (StridePolicy): the
// first strided layout compiled in, then x's row stride a kernel argument
// (`?` or `?16`), with pitches that keep 16-byte rows and pitches that do
// not (the copies' width must follow), each result against the f64 sum of
// its f16 inputs, and four compiles in all where each pitch compiled one.
TEST(GpuCallable, VaryingPitchesOnTheGpu) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = cuda_device(0);
  CallableOptions o;
  o.tuning = false;
  constexpr int64_t M = 256, K = 128, N = 128, kMaxPitch = 264;
  Callable c("def f(x: f16[256, 128], w: f16[128, 128]):\n    return x @ w\n", "f.tfs", o);
  std::mt19937_64 rng(gputest::fresh_seed());
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Tensor w = Tensor::empty(DType::F16, {K, N});
  for (int64_t i = 0; i < K * N; ++i) w.set_linear(i, u(rng));
  cuda::DeviceBuffer dx(dev, M * kMaxPitch * 2), dw(dev, K * N * 2), dout(dev, M * N * 2);
  dw.copy_from_host(w.data_ptr(), K * N * 2);
  CallContext ctx;
  ctx.sync = true;
  auto run_at = [&](int64_t pitch) {
    SCOPED_TRACE(pitch);
    Tensor x = Tensor::empty(DType::F16, {M, pitch});
    for (int64_t i = 0; i < M * pitch; ++i) x.set_linear(i, u(rng));
    dx.copy_from_host(x.data_ptr(), static_cast<size_t>(M * pitch * 2));
    dout.memset(0xFF);  // NaN
    CallTensor tx = cuda_tensor(device_ptr(dx), {M, K}, {pitch, 1});
    CallTensor tw = cuda_tensor(device_ptr(dw), {K, N});
    CallTensor to = cuda_tensor(device_ptr(dout), {M, N});
    tx.dtype = tw.dtype = to.dtype = DType::F16;
    ASSERT_NO_THROW(c.call({tx, tw}, {to}, ctx));
    Tensor out = Tensor::empty(DType::F16, {M, N});
    dout.copy_to_host(out.data_ptr(), M * N * 2);
    double err = 0, norm = 0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double ref = 0;
        for (int64_t k = 0; k < K; ++k) ref += x.get_linear(i * pitch + k) * w.get_linear(k * N + j);
        const double d = out.get_linear(i * N + j) - ref;
        err += d * d;
        norm += ref * ref;
      }
    EXPECT_LE(std::sqrt(err / norm), 1e-2);  // (NaN fails)
  };
  run_at(128);  // contiguous
  run_at(136);  // the first strided layout: its pitch compiled in
  EXPECT_EQ(c.compile_count(), 2);
  for (int64_t pitch : {152, 130, 131, 160, 192, 264, 136}) run_at(pitch);
  // `?` (152, 130, 131, 264, 136) and `?16` (160, 192).
  EXPECT_EQ(c.compile_count(), 4);
}

// A first call whose kernels fail to load (here a TILEFUSE_OVERRIDE_SOURCE
// path that is a directory) left a null entry among the compiled programs,
// which synchronize() then dereferenced (a segfault, tf_synchronize's too).
// The failed call is the caller's error; synchronize has nothing to report,
// and the next call compiles and runs.
TEST(GpuCallable, SynchronizeAfterAFailedFirstLoad) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = cuda_device(0);
  const std::string source = "def f(a: f32[256]):\n    return a * 2.0\n";
  std::string dir_template =
      (std::filesystem::temp_directory_path() / "tilefuse-override-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir_template.data()), nullptr);
  const std::filesystem::path dir = dir_template;
  {
    // Every kernel of either plan: a directory where its override would be.
    const Program p = parse_program(source, "f.tfs");
    for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
      CompileOptions co;
      co.plan = plan;
      co.target = *tir::Target::parse(dev.arch());
      for (const CompiledKernel& ck : compile(p.graph, co).kernels)
        std::filesystem::create_directories(dir / (ck.kernel.name + ".cu"));
    }
  }
  CallableOptions o;
  o.tuning = false;
  Callable c(source, "f.tfs", o);
  cuda::DeviceBuffer din(dev, 256 * 4), dout(dev, 256 * 4);
  din.upload(std::vector<float>(256, 1.5f));
  const std::vector<CallTensor> in = {cuda_tensor(device_ptr(din), {256})};
  const std::vector<CallTensor> out = {cuda_tensor(device_ptr(dout), {256})};
  {
    testing::ScopedEnv env("TILEFUSE_OVERRIDE_SOURCE", dir.c_str());
    try {
      c.call(in, out, {});
      ADD_FAILURE() << "the call ran with its kernel overridden by a directory";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("is not a regular file"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(c.synchronize());
    EXPECT_EQ(c.compile_count(), 0);
  }
  CallContext ctx;
  ctx.sync = true;
  ASSERT_NO_THROW(c.call(in, out, ctx));
  EXPECT_NO_THROW(c.synchronize());
  EXPECT_EQ(dout.download<float>(256), std::vector<float>(256, 3.0f));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tilefuse::driver
