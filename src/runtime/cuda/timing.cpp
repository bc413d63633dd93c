// Benchmark timing (see timing.h).
#include "runtime/cuda/timing.h"

#include <cmath>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>

#include "core/error.h"

namespace tilefuse::cuda {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kFlushFloorBytes = 256 * kMiB;

constexpr int kEventBatch = 1024;  // start/stop event pairs alive at once

void check_options(const TimingOptions& options) {
  if (options.warmup < 0 || options.warmup > kMaxWarmup) {
    throw UserError("timing: the warm-up count must be 0 to " + std::to_string(kMaxWarmup) +
                    " (got " + std::to_string(options.warmup) + ")");
  }
  if (options.repeats < 1 || options.repeats > kMaxRepeats) {
    throw UserError("timing: the repeat count must be 1 to " + std::to_string(kMaxRepeats) +
                    " (got " + std::to_string(options.repeats) + ")");
  }
}

// [Memory Management] CUresult cuMemsetD8Async(CUdeviceptr dstDevice,
// unsigned char uc, size_t N, CUstream hStream): resolved here from the loaded
// libcuda (not part of the loader's table); null if absent.
using MemsetD8AsyncFn = CUresult (*)(CUdeviceptr dst, unsigned char value, std::size_t count,
                                     CUstream stream);

MemsetD8AsyncFn memset_d8_async(const CudaLibraries& libs) {
  static const MemsetD8AsyncFn fn =
      libs.libcuda_handle == nullptr
          ? nullptr
          : reinterpret_cast<MemsetD8AsyncFn>(dlsym(libs.libcuda_handle, "cuMemsetD8Async"));
  return fn;
}

// Enqueues the flush on the default stream without making the host wait, so
// the host runs ahead and the next launch is queued before the GPU reaches
// it. Falls back to cuMemsetD8 (also asynchronous for device memory, per the
// driver API's "API synchronization behavior").
void flush_cache(const Device& device, DeviceBuffer& buffer, int repeat) {
  const unsigned char value = static_cast<unsigned char>(repeat & 0xff);
  if (MemsetD8AsyncFn fn = memset_d8_async(device.libs())) {
    check_cuda(device.libs(), fn(buffer.ptr(), value, buffer.size(), nullptr), "cuMemsetD8Async");
  } else {
    buffer.memset(value);
  }
}

// [Memory Management] CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice,
// CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream): resolved here
// like cuMemsetD8Async; null if absent.
using MemcpyDtoDAsyncFn = CUresult (*)(CUdeviceptr dst, CUdeviceptr src, std::size_t count,
                                       CUstream stream);

MemcpyDtoDAsyncFn memcpy_dtod_async(const CudaLibraries& libs) {
  static const MemcpyDtoDAsyncFn fn =
      libs.libcuda_handle == nullptr
          ? nullptr
          : reinterpret_cast<MemcpyDtoDAsyncFn>(dlsym(libs.libcuda_handle, "cuMemcpyDtoDAsync_v2"));
  return fn;
}

}  // namespace

Timing summarize_samples(std::vector<double> samples_ms) {
  TF_CHECK(!samples_ms.empty(), "no timing samples");
  std::sort(samples_ms.begin(), samples_ms.end());
  Timing t;
  const std::size_t n = samples_ms.size();
  t.repeats = static_cast<int>(n);
  t.min_ms = samples_ms.front();
  t.max_ms = samples_ms.back();
  t.median_ms = n % 2 == 1 ? samples_ms[n / 2] : 0.5 * (samples_ms[n / 2 - 1] + samples_ms[n / 2]);
  t.mean_ms = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0) / static_cast<double>(n);
  return t;
}

std::size_t l2_flush_bytes(const Device& device) {
  const CudaLibraries& l = device.libs();
  // Device is device 0 (device.h); its CUdevice handle is not exposed, so it
  // is looked up again ([Device Management] cuDeviceGet, cuDeviceGetAttribute).
  CUdevice dev = 0;
  check_cuda(l, l.cuDeviceGet(&dev, 0), "cuDeviceGet");
  int l2 = 0;
  check_cuda(l, l.cuDeviceGetAttribute(&l2, kAttrL2CacheSize, dev),
             "cuDeviceGetAttribute(L2_CACHE_SIZE)");
  // 256 MiB is what triton.testing.do_bench writes (its cache buffer), so
  // bench's times and a peer's do_bench times start from the same state.
  return std::max<std::size_t>(2 * static_cast<std::size_t>(std::max(l2, 0)), kFlushFloorBytes);
}

void flush_l2(const Device& device) {
  device.make_current();
  DeviceBuffer flush(device, l2_flush_bytes(device));
  flush_cache(device, flush, 0);
  device.synchronize();
}

std::vector<int> interleaved_order(int round, int count) {
  std::vector<int> order(static_cast<size_t>(std::max(count, 0)));
  for (int i = 0; i < count; ++i)
    order[static_cast<size_t>(i)] = round % 2 == 0 ? i : count - 1 - i;
  return order;
}

std::vector<Timing> time_interleaved_on_device(const Device& device,
                                               const std::vector<std::function<void()>>& launches,
                                               const TimingOptions& options) {
  check_options(options);
  TF_CHECK(!launches.empty(), "time_interleaved_on_device: no launch to time");
  const int n = static_cast<int>(launches.size());
  device.make_current();
  DeviceBuffer flush;
  if (options.flush_l2) flush = DeviceBuffer(device, l2_flush_bytes(device));

  // The warm-up runs the timed loop's own sequence (flush, launch), so that
  // the timed repeats start in that loop's steady state. Back-to-back
  // launches without the flushes in between drew more power: on the H200 the
  // first 100 repeats after 100 ms of them ran a GEMM ~15% slower than
  // triton.testing.do_bench's thousands of flushed repeats (bench/RESULTS.md,
  // session 16). With several launches, a round runs each once, in the
  // timed rounds' order.
  int flushes = 0;
  auto warm_round = [&](int round) {
    for (int k : interleaved_order(round, n)) {
      if (options.flush_l2) flush_cache(device, flush, flushes++);
      launches[static_cast<size_t>(k)]();
    }
  };
  for (int i = 0; i < options.warmup; ++i) warm_round(i);
  device.synchronize();
  if (options.warmup_ms > 0) {
    // Time one flushed round, then keep the GPU busy for about warmup_ms.
    Event a(device), b(device);
    a.record();
    warm_round(0);
    b.record();
    const double one_ms = std::max(1e-3, static_cast<double>(b.elapsed_ms_since(a)));
    const int extra = static_cast<int>(std::min(10000.0, std::ceil(options.warmup_ms / one_ms)));
    for (int i = 0; i < extra; ++i) warm_round(i + 1);
    device.synchronize();
  }

  // The events of a batch of rounds first, so that creating them does not
  // sit between launches; a batch is read before the next reuses its events.
  const int batch = std::max(1, std::min(options.repeats, kEventBatch / n));
  std::vector<std::unique_ptr<Event>> start, stop;
  start.reserve(static_cast<size_t>(batch * n));
  stop.reserve(static_cast<size_t>(batch * n));
  for (int i = 0; i < batch * n; ++i) {
    start.push_back(std::make_unique<Event>(device));
    stop.push_back(std::make_unique<Event>(device));
  }
  std::vector<std::vector<double>> samples(static_cast<size_t>(n),
                                           std::vector<double>(options.repeats));
  for (int first = 0; first < options.repeats; first += batch) {
    const int count = std::min(batch, options.repeats - first);
    for (int r = 0; r < count; ++r)
      for (int k : interleaved_order(first + r, n)) {
        // The flush is stream-ordered before the start event: not timed. The
        // value changes per repeat so that no layer can skip the write.
        if (options.flush_l2) flush_cache(device, flush, flushes++);
        start[static_cast<size_t>(r * n + k)]->record();
        launches[static_cast<size_t>(k)]();
        stop[static_cast<size_t>(r * n + k)]->record();
      }
    // elapsed_ms_since waits for its stop event (in stream order the last
    // round's last launch's wait covers the others).
    for (int r = count - 1; r >= 0; --r)
      for (int k = n - 1; k >= 0; --k)
        samples[static_cast<size_t>(k)][static_cast<size_t>(first + r)] =
            static_cast<double>(stop[static_cast<size_t>(r * n + k)]->elapsed_ms_since(
                *start[static_cast<size_t>(r * n + k)]));
  }
  device.synchronize();  // a fault in the timed work throws here
  std::vector<Timing> out;
  for (std::vector<double>& s : samples) out.push_back(summarize_samples(std::move(s)));
  return out;
}

Timing time_on_device(const Device& device, const std::function<void()>& launch,
                      const TimingOptions& options) {
  return time_interleaved_on_device(device, {launch}, options).front();
}

std::size_t host_flush_bytes() {
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
  const std::size_t twice = llc > 0 ? 2 * static_cast<std::size_t>(llc) : 0;
  return std::max(twice, 32 * kMiB);
}

Timing time_on_host(const std::function<void()>& fn, const TimingOptions& options) {
  check_options(options);
  std::vector<unsigned char> flush;
  if (options.flush_l2) flush.resize(host_flush_bytes());
  for (int i = 0; i < options.warmup; ++i) fn();
  std::vector<double> samples(options.repeats);
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < options.repeats; ++i) {
    if (!flush.empty()) {
      std::memset(flush.data(), i & 0xff, flush.size());
      // Keep the stores: the buffer escapes through an empty asm with a
      // memory clobber, so the compiler cannot drop the memset.
      asm volatile("" : : "r"(flush.data()) : "memory");
    }
    const Clock::time_point t0 = Clock::now();
    fn();
    const Clock::time_point t1 = Clock::now();
    samples[i] = std::chrono::duration<double, std::milli>(t1 - t0).count();
  }
  return summarize_samples(std::move(samples));
}

CopyBandwidth measure_copy_bandwidth(const Device& device, std::size_t bytes,
                                     const TimingOptions& options) {
  if (bytes == 0) throw UserError("copy bandwidth: the copy size must be positive");
  const MemcpyDtoDAsyncFn copy = memcpy_dtod_async(device.libs());
  if (copy == nullptr) throw UserError("copy bandwidth: libcuda has no cuMemcpyDtoDAsync_v2");
  DeviceBuffer src(device, bytes), dst(device, bytes);
  src.memset(1);  // defined contents (the copy's speed does not depend on them)
  CopyBandwidth r;
  r.bytes = bytes;
  r.timing = time_on_device(
      device,
      [&] {
        check_cuda(device.libs(), copy(dst.ptr(), src.ptr(), bytes, nullptr), "cuMemcpyDtoDAsync");
      },
      options);
  if (r.timing.median_ms > 0)
    r.gbps = 2.0 * static_cast<double>(bytes) / (r.timing.median_ms * 1e-3) / 1e9;
  return r;
}

}  // namespace tilefuse::cuda
