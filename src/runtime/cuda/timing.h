// Benchmark timing: GPU work timed with driver events, host work with the
// steady clock; both report the median (and min / max / mean) of N repeats
// after W warm-up runs, with the caches flushed before every timed repeat.
//
// The method follows Triton's do_bench (the peers' figures in
// ../shared/bench/README.md are medians of do_bench with the L2 flushed):
// per repeat, a flush outside the timed region, then one start event, the
// launch, one stop event; every event pair is read after one final wait, so
// the host enqueues ahead and launch overhead is hidden behind the flush.
#pragma once

#include <functional>
#include <vector>

#include "runtime/cuda/device.h"

namespace tilefuse::cuda {

// The most timed and untimed runs one measurement takes: each sample is
// kept (8 bytes), and a count beyond this measures nothing a median of
// 100,000 runs does not, while it could hold the machine for hours.
inline constexpr int kMaxRepeats = 100000;
inline constexpr int kMaxWarmup = 100000;

struct TimingOptions {
  int warmup = 10;       // untimed runs first (0 .. kMaxWarmup)
  int repeats = 100;     // timed runs (1 .. kMaxRepeats)
  bool flush_l2 = true;  // flush the cache before each timed run (untimed)
  // On the device, after `warmup` runs, more untimed runs until about this
  // much GPU time has passed (at most 10000 runs): an idle GPU clocks down
  // (seen on the H200: 345 MHz idle, 1980 MHz busy), and a few short runs
  // do not bring the clocks back up. 0 turns it off.
  double warmup_ms = 100;
};

// Statistics over `repeats` timed runs, in milliseconds.
struct Timing {
  double median_ms = 0;  // the middle sample; the mean of the two middle ones for an even count
  double min_ms = 0;
  double max_ms = 0;
  double mean_ms = 0;
  int repeats = 0;  // the number of samples
};

// The statistics of `samples_ms` (at least one sample; InternalError
// otherwise). Exposed for the tests and for callers with their own samples.
Timing summarize_samples(std::vector<double> samples_ms);

// The size of the buffer time_on_device() writes to flush the L2: twice the
// device's L2 (CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, CUDA Driver API reference,
// "Device Management"), at least 256 MiB: the buffer triton.testing.do_bench
// writes, so that bench and the peers' scripts time from the same state. The
// size matters beyond emptying the L2: on the H200 a 100 MiB flush (twice its
// L2) left the next GEMM 10-35% slower than a 256 MiB one, and back-to-back
// launches without a flush slower still (bench/RESULTS.md, session 16).
// Bytes.
std::size_t l2_flush_bytes(const Device& device);

// Flushes the L2 as time_on_device does before a timed repeat: a
// cuMemsetD8Async of a fresh l2_flush_bytes() device buffer on the default
// stream, then a device synchronize (the buffer is freed after it). For a
// one-off launch that should start from the state a timed repeat starts from
// (the block timeline of bench). Throws UserError for a failing driver call.
void flush_l2(const Device& device);

// Times GPU work. `launch` must enqueue the work on the context's default
// (legacy NULL) stream of `device` -- Function::launch and
// CublasLtGemm::run do -- and must not synchronize. It is called
// options.warmup times, then for about options.warmup_ms of GPU time, each
// call after a flush as in the timed loop (so the timed repeats start in
// that loop's steady state of clocks and power), then the device is
// synchronized (a fault in the work throws there); then per repeat: if options.flush_l2, a
// cuMemsetD8Async of a l2_flush_bytes() device buffer (allocated once per
// call) on the same stream, so it completes before the start event and is not
// timed, while the host runs ahead to queue the launch; then a start
// event, `launch`, a stop event (cuEventRecord; CUDA Driver API reference,
// "Event Management"). After the last repeat it waits for the last event and
// reads each pair with cuEventElapsedTime (resolution about 0.5 us); the
// events are reused in batches of kEventBatch repeats, so only the samples
// grow with `repeats`. Throws UserError for a warmup or repeats count out
// of range and for a failing driver call (check_cuda), and whatever
// `launch` throws.
Timing time_on_device(const Device& device, const std::function<void()>& launch,
                      const TimingOptions& options = {});

// Times several pieces of GPU work in alternation, in the same power state:
// a GPU at its power cap lowers its clock over hundreds of ms, so of two
// 1.4 ms GEMMs timed one after the other by time_on_device the second runs
// at a lower clock (on an H100, PyTorch's cuBLAS timed first read 9% faster
// than ours; in alternation, 3% at most: bench/RESULTS.md, session 37).
// Each `launches[k]` is what time_on_device's `launch` is. The warm-up runs
// rounds (each launch once, after its flush) options.warmup times and then
// for about options.warmup_ms; then options.repeats timed rounds, round r
// running the launches in interleaved_order(r, n) (forward in even rounds,
// backward in odd ones, so no launch always follows the same one), each
// after a flush and between its own events. Returns one Timing a launch, in
// the order of `launches`; time_on_device is the one-launch case. Throws as
// time_on_device does, and InternalError for no launch.
std::vector<Timing> time_interleaved_on_device(const Device& device,
                                               const std::vector<std::function<void()>>& launches,
                                               const TimingOptions& options = {});
// The order of the `count` launches in round `round` of
// time_interleaved_on_device: 0 .. count - 1 in even rounds, reversed in
// odd ones.
std::vector<int> interleaved_order(int round, int count);

// The device's copy bandwidth (issue 12: the ceiling a memory-bound kernel is
// measured against, METHOD.md's "two numbers"): a copy of `bytes` from one
// device buffer to another (cuMemcpyDtoDAsync on the default stream; CUDA
// Driver API reference, "Memory Management"), timed by time_on_device with
// `options` (so the L2 is flushed before each copy, like the kernels).
// gbps counts the bytes read plus the bytes written, 2 * bytes, over the
// median time, in 1e9 bytes a second. Throws UserError for bytes == 0, when
// the two buffers cannot be allocated, or a failing driver call.
struct CopyBandwidth {
  std::size_t bytes = 0;  // copied (each read once and written once)
  Timing timing;
  double gbps = 0;
};
CopyBandwidth measure_copy_bandwidth(const Device& device, std::size_t bytes,
                                     const TimingOptions& options = {});

// Times host work (the CPU backend) with std::chrono::steady_clock around each
// call of `fn`: options.warmup untimed calls, then options.repeats timed
// ones. With options.flush_l2 the host's caches are flushed before each timed
// call, untimed, by writing a buffer of host_flush_bytes(). Throws UserError
// for a warmup or repeats count out of range, and whatever `fn` throws.
Timing time_on_host(const std::function<void()>& fn, const TimingOptions& options = {});

// Twice the last-level cache the C library reports (sysconf
// _SC_LEVEL3_CACHE_SIZE, else _SC_LEVEL2_CACHE_SIZE), at least 32 MiB. Bytes.
std::size_t host_flush_bytes();

}  // namespace tilefuse::cuda
