// The GPU host path around the caller (driver::Callable, what the C API and
// the Python package run; CudaProgram under it): the caller's current
// context is put back after every call, a failed one too (on two GPUs as
// well); the legacy stream during a blocking stream's CUDA graph capture
// gets the intended errors and leaves the capture going; a Callable
// destroyed during another stream's capture leaves that capture whole; a
// grid no launch can take is refused before any kernel of the program ran;
// and a device-side index check replayed from a graph is worded at the
// sizes it was captured at, however many calls at other sizes came since.
// Skipped without a GPU (the two-GPU test with fewer than two).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "driver/callable.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "driver/specialize.h"
#include "frontend/frontend.h"
#include "gpu_test_util.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/loader.h"

namespace tilefuse::driver {
namespace {

using cuda::CUcontext;
using cuda::CUdeviceptr;
using cuda::CUresult;
using cuda::CUstream;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;

// CUstreamCaptureMode (cuda.h).
constexpr int kCaptureGlobal = 0, kCaptureThreadLocal = 1, kCaptureRelaxed = 2;

// The driver calls the tests make themselves (the library has no use for
// them), from the libcuda tilefuse loaded.
struct Driver {
  CUresult (*ctx_get_current)(CUcontext*) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*stream_create)(CUstream*, unsigned) = nullptr;
  CUresult (*stream_destroy)(CUstream) = nullptr;
  CUresult (*stream_synchronize)(CUstream) = nullptr;
  CUresult (*begin_capture)(CUstream, int) = nullptr;
  CUresult (*end_capture)(CUstream, CUgraph*) = nullptr;
  CUresult (*instantiate)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;
  CUresult (*graph_launch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*exec_destroy)(CUgraphExec) = nullptr;
  CUresult (*graph_destroy)(CUgraph) = nullptr;
  CUresult (*memset_async)(CUdeviceptr, unsigned char, std::size_t, CUstream) = nullptr;
  CUresult (*device_count)(int*) = nullptr;
  // Optional (null where the driver has dropped it): a context of the
  // caller's own, created current, and its destruction.
  CUresult (*ctx_create)(CUcontext*, unsigned, int) = nullptr;
  CUresult (*ctx_destroy)(CUcontext) = nullptr;

  static const Driver& get() {
    static const Driver d = [] {
      Driver x;
      const cuda::CudaLibraries* libs = cuda::load_cuda_libraries();
      void* h = libs ? libs->libcuda_handle : nullptr;
      auto sym = [h](auto& slot, const char* name) {
        slot =
            h ? reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(h, name)) : nullptr;
        EXPECT_NE(slot, nullptr) << "libcuda has no " << name;
      };
      sym(x.ctx_get_current, "cuCtxGetCurrent");
      sym(x.ctx_set_current, "cuCtxSetCurrent");
      sym(x.stream_create, "cuStreamCreate");
      sym(x.stream_destroy, "cuStreamDestroy_v2");
      sym(x.stream_synchronize, "cuStreamSynchronize");
      sym(x.begin_capture, "cuStreamBeginCapture_v2");
      sym(x.end_capture, "cuStreamEndCapture");
      sym(x.instantiate, "cuGraphInstantiateWithFlags");
      sym(x.graph_launch, "cuGraphLaunch");
      sym(x.exec_destroy, "cuGraphExecDestroy");
      sym(x.graph_destroy, "cuGraphDestroy");
      sym(x.memset_async, "cuMemsetD8Async");
      sym(x.device_count, "cuDeviceGetCount");
      if (h) {
        x.ctx_create = reinterpret_cast<decltype(x.ctx_create)>(dlsym(h, "cuCtxCreate_v2"));
        x.ctx_destroy = reinterpret_cast<decltype(x.ctx_destroy)>(dlsym(h, "cuCtxDestroy_v2"));
      }
      return x;
    }();
    return d;
  }
};

CUcontext current_context() {
  CUcontext c = nullptr;
  EXPECT_EQ(Driver::get().ctx_get_current(&c), 0);
  return c;
}

void set_current_context(CUcontext c) {
  ASSERT_EQ(Driver::get().ctx_set_current(c), 0);
}

// A stream of its own (flags 0: a blocking stream, ordered with the legacy
// stream; 1: CU_STREAM_NON_BLOCKING), destroyed at the end of the scope.
struct Stream {
  CUstream s = nullptr;
  explicit Stream(unsigned flags) { EXPECT_EQ(Driver::get().stream_create(&s, flags), 0); }
  ~Stream() { Driver::get().stream_destroy(s); }
};

// A finished capture instantiated and launched on `stream`, then waited
// for; the driver's results of each step, 0 where all went well.
struct Replay {
  CUresult end = -1, instantiate = -1, launch = -1, sync = -1;
};
Replay end_and_replay(CUstream stream, int replays = 1) {
  const Driver& d = Driver::get();
  Replay r;
  CUgraph graph = nullptr;
  r.end = d.end_capture(stream, &graph);
  if (r.end != 0 || graph == nullptr) return r;
  CUgraphExec exec = nullptr;
  r.instantiate = d.instantiate(&exec, graph, 0);
  if (r.instantiate == 0) {
    for (int i = 0; i < replays; ++i) r.launch = d.graph_launch(exec, stream);
    r.sync = d.stream_synchronize(stream);
    d.exec_destroy(exec);
  }
  d.graph_destroy(graph);
  return r;
}

void expect_replayed(const Replay& r) {
  EXPECT_EQ(r.end, 0) << "the capture did not end well";
  EXPECT_EQ(r.instantiate, 0);
  EXPECT_EQ(r.launch, 0);
  EXPECT_EQ(r.sync, 0);
}

// Runs `f`, which must throw a UserError (an InternalError is a failure)
// whose message holds each of `parts`.
template <class F>
void expect_user_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error (expected one holding \"" << parts.at(0) << "\")";
  } catch (const InternalError& e) {
    ADD_FAILURE() << "an internal error: " << e.what();
  } catch (const UserError& e) {
    for (const std::string& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

void* address(const cuda::DeviceBuffer& b) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(b.ptr()));
}

CallTensor on_gpu(const cuda::DeviceBuffer& b, DType dtype, Shape shape, int device_id = 0) {
  CallTensor t;
  t.device = DeviceKind::kCuda;
  t.device_id = device_id;
  t.data = address(b);
  t.dtype = dtype;
  t.strides = contiguous_strides(shape);
  t.shape = std::move(shape);
  return t;
}

// `x[i] * 2.0` on one device: x f32[5, 4] = 0, 1, ..., 19 and an index
// tensor of two rows, an output of [2, 4].
constexpr const char* kGather = "def g(x: f32[5, 4], i: i64[M]):\n    return x[i] * 2.0\n";

struct GatherCall {
  cuda::DeviceBuffer x, i, out;
  int device_id;
  GatherCall(cuda::Device& dev, int id)
      : x(dev, 20 * 4), i(dev, 2 * 8), out(dev, 2 * 4 * 4), device_id(id) {
    std::vector<float> xs(20);
    for (int k = 0; k < 20; ++k) xs[static_cast<size_t>(k)] = static_cast<float>(k);
    x.upload(xs);
    i.upload(std::vector<int64_t>{4, 1});
  }
  std::vector<CallTensor> inputs() const {
    return {on_gpu(x, DType::F32, {5, 4}, device_id), on_gpu(i, DType::I64, {2}, device_id)};
  }
  std::vector<CallTensor> outputs() const { return {on_gpu(out, DType::F32, {2, 4}, device_id)}; }
  // out = x[[4, 1]] * 2.
  void expect_result() const {
    const std::vector<float> got = out.download<float>(8);
    for (int c = 0; c < 4; ++c) {
      EXPECT_EQ(got[static_cast<size_t>(c)], 2.0f * static_cast<float>(16 + c));
      EXPECT_EQ(got[static_cast<size_t>(4 + c)], 2.0f * static_cast<float>(4 + c));
    }
  }
};

CallableOptions untuned() {
  CallableOptions o;
  o.tuning = false;
  return o;
}

CallContext synced(CUstream stream = nullptr) {
  CallContext c;
  c.stream = stream;
  c.sync = true;
  return c;
}

// A call makes the device's primary context current to compile, load and
// launch; the caller's (here none) is current again after it returns or
// throws, whichever way: a first call (compiles), a repeated one, one
// refused before any launch, one whose kernel's index check fails (raised
// by check="sync"), one not waited for, synchronize, workspace_bytes and
// the destructor.
TEST(GpuHostPath, ACallPutsBackTheCallersContextNone) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = cuda_device(0);
  GatherCall g(dev, 0);
  auto c = std::make_unique<Callable>(kGather, "g.tfs", untuned());
  set_current_context(nullptr);
  for (int repeat = 0; repeat < 2; ++repeat) {
    ASSERT_NO_THROW(c->call(g.inputs(), g.outputs(), synced()));
    EXPECT_EQ(current_context(), nullptr) << "call " << repeat;
  }
  // (Reading the result needs a current context: the device's, then none
  // again.)
  dev.make_current();
  g.expect_result();
  set_current_context(nullptr);
  // Refused before any launch (an output of the wrong shape).
  std::vector<CallTensor> wrong = g.outputs();
  wrong[0].shape = {3, 4};
  wrong[0].strides = {4, 1};
  EXPECT_THROW(c->call(g.inputs(), wrong, synced()), UserError);
  EXPECT_EQ(current_context(), nullptr);
  // An index out of range, found by the kernel and raised by the sync.
  // (The copies need a current context: the device's, then none again.)
  dev.make_current();
  g.i.upload(std::vector<int64_t>{0, 7});
  set_current_context(nullptr);
  try {
    c->call(g.inputs(), g.outputs(), synced());
    ADD_FAILURE() << "no index error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIndex) << e.what();
  }
  EXPECT_EQ(current_context(), nullptr);
  // The good indices again and a call not waited for (its output cleared
  // first: what is read at the end is this call's, not the failed one's,
  // whose row 1 was an index out of range), then synchronize, which waits
  // for it.
  dev.make_current();
  g.i.upload(std::vector<int64_t>{4, 1});
  g.out.memset(0);
  set_current_context(nullptr);
  ASSERT_NO_THROW(c->call(g.inputs(), g.outputs(), {}));
  EXPECT_EQ(current_context(), nullptr);
  EXPECT_NO_THROW(c->synchronize());
  EXPECT_EQ(current_context(), nullptr);
  EXPECT_NO_THROW(c->workspace_bytes(g.inputs()));
  EXPECT_EQ(current_context(), nullptr);
  c.reset();
  EXPECT_EQ(current_context(), nullptr);
  // The primary context was used and is fine: the last call's result.
  dev.make_current();
  dev.synchronize();
  g.expect_result();
}

// The caller's current context is one of its own (not the primary one
// tilefuse works in): a good call and a failing one leave it current.
TEST(GpuHostPath, ACallPutsBackAContextOfTheCallersOwn) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  const Driver& d = Driver::get();
  if (!d.ctx_create || !d.ctx_destroy) GTEST_SKIP() << "the driver has no cuCtxCreate_v2";
  cuda::Device& dev = cuda_device(0);
  GatherCall g(dev, 0);
  Callable c(kGather, "g.tfs", untuned());
  CUcontext own = nullptr;
  ASSERT_EQ(d.ctx_create(&own, 0, 0), 0);  // current now
  ASSERT_NE(own, dev.context());
  ASSERT_NO_THROW(c.call(g.inputs(), g.outputs(), synced()));
  EXPECT_EQ(current_context(), own);
  dev.make_current();
  g.expect_result();
  g.i.upload(std::vector<int64_t>{0, 7});
  set_current_context(own);
  EXPECT_THROW(c.call(g.inputs(), g.outputs(), synced()), UserError);
  EXPECT_EQ(current_context(), own);
  EXPECT_NO_THROW(c.synchronize());
  EXPECT_EQ(current_context(), own);
  EXPECT_EQ(d.ctx_destroy(own), 0);
  dev.make_current();
  g.i.upload(std::vector<int64_t>{4, 1});
  ASSERT_NO_THROW(c.call(g.inputs(), g.outputs(), synced()));
  EXPECT_EQ(current_context(), dev.context());
  g.expect_result();
}

// On two GPUs: the caller's current context is device 0's (a PyTorch user
// on cuda:0); calls on cuda:1 tensors, good and failing, leave it current.
TEST(GpuHostPath, ACallOnTheSecondGpuLeavesTheFirstCurrent) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  int count = 0;
  ASSERT_EQ(Driver::get().device_count(&count), 0);
  if (count < 2) GTEST_SKIP() << "needs two GPUs, the machine has " << count;
  cuda::Device& dev0 = cuda_device(0);
  cuda::Device& dev1 = cuda_device(1);
  GatherCall g(dev1, 1);
  Callable c(kGather, "g.tfs", untuned());
  dev0.make_current();
  for (int repeat = 0; repeat < 2; ++repeat) {
    ASSERT_NO_THROW(c.call(g.inputs(), g.outputs(), synced()));
    EXPECT_EQ(current_context(), dev0.context()) << "call " << repeat;
  }
  // (Copies to device 1's memory in its context, then device 0's again.)
  dev1.make_current();
  g.i.upload(std::vector<int64_t>{0, 7});
  dev0.make_current();
  EXPECT_THROW(c.call(g.inputs(), g.outputs(), synced()), UserError);
  EXPECT_EQ(current_context(), dev0.context());
  dev1.make_current();
  g.i.upload(std::vector<int64_t>{4, 1});
  dev0.make_current();
  ASSERT_NO_THROW(c.call(g.inputs(), g.outputs(), synced()));
  EXPECT_EQ(current_context(), dev0.context());
  EXPECT_NO_THROW(c.synchronize());
  EXPECT_EQ(current_context(), dev0.context());
  dev1.make_current();
  g.expect_result();
}

// While a blocking stream captures in global mode, the legacy stream
// cannot be used (cuStreamIsCapturing on it answers
// CUDA_ERROR_STREAM_CAPTURE_IMPLICIT): a first call there (which would
// compile and load) and a check="sync" call get the intended errors, not
// an internal one, and the capture goes on and replays. A call at known
// sizes there gets as far as the launch, which the driver refuses: the
// caller's error (UserError), not an internal one (that capture may be
// invalidated by it: the driver's rule). Ended, the next calls run.
TEST(GpuHostPath, TheLegacyStreamDuringABlockingStreamsCapture) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = cuda_device(0);
  GatherCall g(dev, 0);
  Callable warm(kGather, "g.tfs", untuned());
  ASSERT_NO_THROW(warm.call(g.inputs(), g.outputs(), synced()));
  Callable cold(kGather, "g.tfs", untuned());
  cuda::DeviceBuffer marker(dev, 256);
  marker.memset(0);
  const Driver& d = Driver::get();
  {
    Stream blocking(0);
    ASSERT_EQ(d.begin_capture(blocking.s, kCaptureGlobal), 0);
    ASSERT_EQ(d.memset_async(marker.ptr(), 7, 256, blocking.s), 0);
    expect_user_error([&] { cold.call(g.inputs(), g.outputs(), {}); },
                      {"call the program once at these sizes before capturing"});
    expect_user_error([&] { warm.call(g.inputs(), g.outputs(), synced()); },
                      {"capture without it"});
    expect_replayed(end_and_replay(blocking.s));
  }
  EXPECT_EQ(marker.download<unsigned char>(256), std::vector<unsigned char>(256, 7));
  {
    Stream blocking(0);
    ASSERT_EQ(d.begin_capture(blocking.s, kCaptureGlobal), 0);
    expect_user_error([&] { warm.call(g.inputs(), g.outputs(), {}); }, {"cuLaunchKernel"});
    end_and_replay(blocking.s);
  }
  for (Callable* c : {&cold, &warm}) {
    g.out.memset(0);
    ASSERT_NO_THROW(c->call(g.inputs(), g.outputs(), synced()));
    g.expect_result();
  }
}

// A Callable destroyed while another stream captures (in each capture
// mode): its destructor waits for its own launches only and frees in
// relaxed mode, so the capture is not invalidated; it ends, replays, and
// the captured call's results are right. First, in the same mode, a
// capture holding the call alone (no destruction) must replay too: where
// only the second fails, the destruction broke it. The captured call
// records nothing into the capture that its own destructor would wait for
// (which the driver refuses: CUDA_ERROR_INVALID_VALUE), so `captured` going
// at the end of each round is no error either (compute-sanitizer's memcheck
// reports one where it happens).
TEST(GpuHostPath, DestroyingACallableDuringAnotherStreamsCapture) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = cuda_device(0);
  const Driver& d = Driver::get();
  for (const int mode : {kCaptureGlobal, kCaptureThreadLocal, kCaptureRelaxed}) {
    SCOPED_TRACE("capture mode " + std::to_string(mode));
    GatherCall doomed_call(dev, 0), captured_call(dev, 0);
    auto doomed = std::make_unique<Callable>(kGather, "g.tfs", untuned());
    Callable captured(kGather, "g.tfs", untuned());
    Stream side(1), capturing(1);
    // The doomed one's last launch, on a stream of its own, not waited for.
    CallContext on_side;
    on_side.stream = side.s;
    ASSERT_NO_THROW(doomed->call(doomed_call.inputs(), doomed_call.outputs(), synced(side.s)));
    ASSERT_NO_THROW(doomed->call(doomed_call.inputs(), doomed_call.outputs(), on_side));
    // Warmed up on the capturing stream, then captured there.
    ASSERT_NO_THROW(
        captured.call(captured_call.inputs(), captured_call.outputs(), synced(capturing.s)));
    CallContext on_capturing;
    on_capturing.stream = capturing.s;
    {
      SCOPED_TRACE("the call alone");
      captured_call.out.memset(0);
      ASSERT_EQ(d.begin_capture(capturing.s, mode), 0);
      ASSERT_NO_THROW(captured.call(captured_call.inputs(), captured_call.outputs(), on_capturing));
      expect_replayed(end_and_replay(capturing.s));
      captured_call.expect_result();
    }
    captured_call.out.memset(0);
    ASSERT_EQ(d.begin_capture(capturing.s, mode), 0);
    ASSERT_NO_THROW(captured.call(captured_call.inputs(), captured_call.outputs(), on_capturing));
    doomed.reset();
    expect_replayed(end_and_replay(capturing.s, 3));
    captured_call.expect_result();
    doomed_call.expect_result();
    EXPECT_NO_THROW(captured.synchronize());
  }
}

// Two outputs, two kernels: `a * 2.0` (4 elements) first, then the batched
// GEMM `x @ w` over B batches of 16 x 16 (one block a batch). At B = 2^31
// (x, w and the product have 2^39 elements each, under the front end's
// 2^40) the GEMM's grid is 2^31 blocks, one more than a launch allows: the
// launch is refused with the kernel named and nothing launched (the first
// kernel's output keeps its bytes); at B = 16 the same program runs.
TEST(GpuHostPath, AGridNoLaunchCanTakeIsRefusedBeforeAnyKernelRuns) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = cuda_device(0);
  const Program p = parse_program(
      "def two(a: f32[4], x: f32[B, 16, 16], w: f32[B, 16, 16]):\n    return a * 2.0, x @ w\n",
      "two.tfs");
  const Graph& g = p.graph;
  constexpr int64_t kSmall = 16, kBatch = 16 * 16;
  cuda::DeviceBuffer a(dev, 16), out_a(dev, 16), x(dev, kSmall * kBatch * 4),
      w(dev, kSmall * kBatch * 4), out_c(dev, kSmall * kBatch * 4);
  a.upload(std::vector<float>{1, 2, 3, 4});
  x.upload(std::vector<float>(kSmall * kBatch, 1.0f));
  w.upload(std::vector<float>(kSmall * kBatch, 0.5f));
  const int64_t huge = int64_t{1} << 31;
  const std::vector<ArgDesc> args = {{DType::F32, {4}, {1}, a.ptr()},
                                     {DType::F32, {huge, 16, 16}, {kBatch, 16, 1}, x.ptr()},
                                     {DType::F32, {huge, 16, 16}, {kBatch, 16, 1}, w.ptr()}};
  const Binding binding = bind_symbols(g, args);
  CompileOptions co;
  co.plan = PlanKind::kUnfused;
  co.target = *gputest::device_target();
  co.lower.specialization = specialize(g, binding, args);
  const CompiledProgram compiled = compile(g, co);
  ASSERT_EQ(compiled.kernels.size(), 2u);
  ASSERT_EQ(compiled.kernels[0].lowered.step.output, g.outputs()[0]) << "a * 2.0 is not first";
  CudaProgram program(compiled, dev);
  DeviceCall call;
  call.binding = binding;
  call.inputs = {a.ptr(), x.ptr(), w.ptr()};
  call.input_strides = {{1}, {kBatch, 16, 1}, {kBatch, 16, 1}};
  call.outputs = {out_a.ptr(), out_c.ptr()};
  out_a.memset(0xFF);
  expect_user_error(
      [&] { program.launch(call, nullptr); },
      {"kernel " + compiled.kernels[1].cuda->name + " needs a grid of",
       "= 2147483648 blocks at these sizes",
       "more than a launch allows (at most 2147483647 blocks); nothing was launched"});
  dev.synchronize();
  for (float v : out_a.download<float>(4)) EXPECT_TRUE(std::isnan(v)) << v;
  call.binding = {kSmall};
  ASSERT_NO_THROW(program.launch(call, nullptr));
  ASSERT_NO_THROW(program.check_status(nullptr));
  EXPECT_EQ(out_a.download<float>(4), (std::vector<float>{2, 4, 6, 8}));
  // Each product element sums 16 products 1 * 0.5.
  EXPECT_EQ(out_c.download<float>(kSmall * kBatch), std::vector<float>(kSmall * kBatch, 8.0f));
}

// The device-side check of an index no kernel reads (a slice of a gather
// along a fixed dim: only i[..., 0] is read), captured at i64[3, 4, 2] with
// a bad index at row-major position 7, then 9 calls at [4, 3, 2] (the same
// compiled program: the same size buckets; each call launching the check)
// before the graph replays: the report is worded in the captured shape,
// `i`[0, 3, 1] (decoded in [4, 3, 2] it would read [1, 0, 1]).
TEST(GpuHostPath, AReplayedIndexCheckIsWordedAtItsCapturedSizes) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = cuda_device(0);
  const Driver& d = Driver::get();
  Callable c("def s(x: f32[5, 4], i: i64[R, S, 2]):\n    return x[i][:, :, 0:1] * 2.0\n", "s.tfs",
             untuned());
  cuda::DeviceBuffer x(dev, 20 * 4), i_a(dev, 24 * 8), i_b(dev, 24 * 8), out_a(dev, 48 * 4),
      out_b(dev, 48 * 4);
  x.upload(std::vector<float>(20, 1.0f));
  i_a.upload(std::vector<int64_t>(24, 3));
  i_b.upload(std::vector<int64_t>(24, 2));
  const std::vector<CallTensor> in_a = {on_gpu(x, DType::F32, {5, 4}),
                                        on_gpu(i_a, DType::I64, {3, 4, 2})};
  const std::vector<CallTensor> in_b = {on_gpu(x, DType::F32, {5, 4}),
                                        on_gpu(i_b, DType::I64, {4, 3, 2})};
  const std::vector<CallTensor> outs_a = {on_gpu(out_a, DType::F32, {3, 4, 1, 4})};
  const std::vector<CallTensor> outs_b = {on_gpu(out_b, DType::F32, {4, 3, 1, 4})};
  Stream capturing(1);
  ASSERT_NO_THROW(c.call(in_a, outs_a, synced(capturing.s)));
  ASSERT_EQ(d.begin_capture(capturing.s, kCaptureGlobal), 0);
  CallContext on_capturing;
  on_capturing.stream = capturing.s;
  ASSERT_NO_THROW(c.call(in_a, outs_a, on_capturing));
  CUgraph graph = nullptr;
  ASSERT_EQ(d.end_capture(capturing.s, &graph), 0);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(d.instantiate(&exec, graph, 0), 0);
  for (int k = 0; k < 9; ++k) ASSERT_NO_THROW(c.call(in_b, outs_b, synced()));
  EXPECT_EQ(c.compile_count(), 1) << "the two shapes did not share one compiled program";
  std::vector<int64_t> bad(24, 3);
  bad[7] = 9;
  i_a.upload(bad);
  ASSERT_EQ(d.graph_launch(exec, capturing.s), 0);
  ASSERT_EQ(d.stream_synchronize(capturing.s), 0);
  expect_user_error([&] { c.synchronize(); },
                    {"index 9 is out of bounds for dim 0 of `x` (size 5): `i`[0, 3, 1] = 9"});
  i_a.upload(std::vector<int64_t>(24, 3));
  ASSERT_EQ(d.graph_launch(exec, capturing.s), 0);
  ASSERT_EQ(d.stream_synchronize(capturing.s), 0);
  EXPECT_NO_THROW(c.synchronize());
  d.exec_destroy(exec);
  d.graph_destroy(graph);
}

}  // namespace
}  // namespace tilefuse::driver
