// The mma.sync ceiling on the GPU at hand: a kernel that only issues
// independent mma.sync.m16n8k16 (f16 in, f32 accumulate) from registers, no
// memory traffic in the loop. It bounds what the MmaTile path can reach and is
// printed for bench/RESULTS.md. Skips without a GPU.
#include <gtest/gtest.h>

#include <iostream>

#include "driver/cuda_program.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/loader.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/cuda/timing.h"

namespace tilefuse {
namespace {

constexpr const char* kPeak = R"(
#include "tf_gemm.cuh"
extern "C" __global__ void __launch_bounds__(256) mma_peak(float* out, int iters) {
  unsigned a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = 0x3c003c00u ^ (threadIdx.x + i);
  for (int i = 0; i < 2; ++i) b[i] = 0x3c003c00u ^ (threadIdx.x * 3 + i);
  float c[16][4] = {};
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int t = 0; t < 16; ++t) tf::MmaOp<tf::f16>::run(c[t], a, b);
  }
  float s = 0;
  for (int t = 0; t < 16; ++t) s += c[t][0] + c[t][1] + c[t][2] + c[t][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
)";

TEST(MmaSyncPeak, MeasuresTheCeiling) {
  std::string why;
  if (!cuda::cuda_available(&why)) GTEST_SKIP() << why;
  cuda::Device& dev = driver::default_device();
  cuda::CompiledKernel k =
      cuda::compile_cuda(kPeak, "mma_peak", driver::cuda_compile_options(dev.arch()));
  cuda::Module mod(dev, k.cubin);
  cuda::Function f = mod.function("mma_peak");
  const int blocks = dev.sm_count() * 4, threads = 256;
  int iters = 4096;
  cuda::DeviceBuffer out(dev, sizeof(float) * blocks * threads);
  void* args[] = {&out.arg(), &iters};
  cuda::TimingOptions o;
  o.warmup = 3;
  o.repeats = 20;
  o.flush_l2 = false;
  cuda::Timing t = cuda::time_on_device(
      dev, [&] { f.launch({static_cast<unsigned>(blocks)}, {threads}, 0, args); }, o);
  const double flops = 2.0 * 16 * 8 * 16 * 16.0 * iters * (blocks * threads / 32);
  const double tflops = flops / (t.median_ms * 1e-3) / 1e12;
  std::cout << "mma.sync.m16n8k16 f16->f32 ceiling on " << dev.name() << ": " << tflops
            << " TFLOP/s (" << t.median_ms << " ms)\n";
  EXPECT_GT(tflops, 10.0);
}

}  // namespace
}  // namespace tilefuse
