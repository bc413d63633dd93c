// An index out of range that no kernel reads (x[i] @ w with K or N of 0,
// x[i][0] @ w, x[i][0:1], a gather of a gather), on the caller's device
// memory (CudaProgram::launch(DeviceCall), the C API's and torch's path):
// the device-side check (tf_index_check.cuh) raises the CPU executor's
// error, word for word and at the same place; the program then runs
// correctly (the status word cleared); where no index can go unread no check
// is launched. Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "driver/callable.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "driver/execute.h"
#include "driver/specialize.h"
#include "frontend/frontend.h"
#include "gpu_test_util.h"
#include "reference/eval.h"
#include "runtime/cuda/device.h"

namespace tilefuse::driver {
namespace {

// An input: its host values (contiguous `storage`) and the view the program
// gets (`strides` in elements over the storage; empty: contiguous).
struct Input {
  Tensor storage;
  Shape shape;
  std::vector<int64_t> strides;

  Tensor view() const { return strides.empty() ? storage : storage.as_strided(shape, strides, 0); }
};

Input contiguous(const Tensor& t) {
  return {t, t.shape(), {}};
}

Input index_input(DType dtype, const Shape& shape, const std::vector<int64_t>& values) {
  Tensor t = Tensor::empty(dtype, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  for (size_t i = 0; i < values.size(); ++i)
    t.set_linear(static_cast<int64_t>(i), static_cast<double>(values[i]));
  return contiguous(t);
}

// Values 0.25 * (k % 13) - 1 of a float tensor (exact in every float dtype).
Tensor ramp(DType dtype, const Shape& shape) {
  Tensor t = Tensor::empty(dtype, shape);
  for (int64_t k = 0; k < t.numel(); ++k) t.set_linear(k, 0.25 * static_cast<double>(k % 13) - 1);
  return t;
}

std::size_t bytes_of(const Tensor& t) {
  return static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype());
}

struct Outcome {
  std::optional<UserError> error;
  std::vector<Tensor> outputs;
};

Outcome on_cpu(const Program& p, const std::vector<Input>& inputs) {
  std::vector<Tensor> ts;
  for (const Input& in : inputs) ts.push_back(in.view());
  CompileOptions co;
  const Binding b = bind_symbols(p.graph, ts);
  std::vector<ArgDesc> descs;
  for (const Tensor& t : ts) descs.push_back(ArgDesc::of(t));
  co.lower.specialization = specialize(p.graph, b, descs);
  const CompiledProgram cp = compile(p.graph, co);
  Outcome o;
  try {
    o.outputs = execute(cp, ts);
  } catch (const UserError& e) {
    o.error = e;
  }
  return o;
}

// One program on the GPU through launch(DeviceCall), its inputs in device
// memory as given (a strided index stays strided).
class DeviceRunner {
 public:
  DeviceRunner(const Program& p, const std::vector<Input>& like)
      : program_(p), dev_(default_device()) {
    std::vector<Tensor> ts;
    for (const Input& in : like) ts.push_back(in.view());
    const Binding b = bind_symbols(p.graph, ts);
    std::vector<ArgDesc> descs;
    for (const Tensor& t : ts) descs.push_back(ArgDesc::of(t));
    CompileOptions co;
    co.target = *gputest::device_target();
    co.lower.specialization = specialize(p.graph, b, descs);
    compiled_ = compile(p.graph, co);
    cuda_ = std::make_unique<CudaProgram>(compiled_, dev_);
  }

  Outcome run(const std::vector<Input>& inputs) {
    const Graph& g = program_.graph;
    std::vector<Tensor> ts;
    for (const Input& in : inputs) ts.push_back(in.view());
    DeviceCall call;
    call.binding = bind_symbols(g, ts);
    std::vector<cuda::DeviceBuffer> ins, outs;
    for (const Input& in : inputs) {
      const std::size_t bytes =
          static_cast<std::size_t>(in.storage.numel()) * dtype_size(in.storage.dtype());
      ins.emplace_back(dev_, std::max<std::size_t>(bytes, 16));
      if (bytes) ins.back().copy_from_host(in.storage.data_ptr(), bytes);
      call.inputs.push_back(ins.back().ptr());
      call.input_strides.push_back(in.strides.empty() ? contiguous_strides(in.shape) : in.strides);
    }
    Outcome o;
    for (ValueId v : g.outputs()) {
      const Node& n = g.node(v);
      o.outputs.push_back(Tensor::empty(n.dtype, bound_shape(n, call.binding)));
      outs.emplace_back(dev_, std::max<std::size_t>(bytes_of(o.outputs.back()), 16));
      outs.back().memset(0xFF);
      call.outputs.push_back(outs.back().ptr());
    }
    const std::size_t ws = cuda_->workspace_bytes(call.binding);
    cuda::DeviceBuffer workspace(dev_, std::max<std::size_t>(ws, 256));
    call.workspace = workspace.ptr();
    call.workspace_bytes = ws;
    cuda_->launch(call, nullptr);
    try {
      cuda_->check_status(nullptr);
    } catch (const UserError& e) {
      o.error = e;
      o.outputs.clear();
      return o;
    }
    for (size_t i = 0; i < outs.size(); ++i)
      if (const std::size_t bytes = bytes_of(o.outputs[i]))
        outs[i].copy_to_host(o.outputs[i].data_ptr(), bytes);
    return o;
  }

  CudaProgram& program() { return *cuda_; }

 private:
  const Program& program_;
  cuda::Device& dev_;
  CompiledProgram compiled_;
  std::unique_ptr<CudaProgram> cuda_;
};

// `bad` fails on the GPU with the CPU executor's error (its text, kind and
// place; `message` pins the text) after an index check kernel ran; then
// `good` (the same layouts) runs on the same CudaProgram, the status word
// cleared, to the CPU executor's outputs bit for bit (small exact values).
void expect_like_cpu(const std::string& source, const std::vector<Input>& bad,
                     const std::vector<Input>& good, const std::string& message) {
  const Program p = parse_program(source, "unread.tfs");
  const Outcome cpu_bad = on_cpu(p, bad);
  ASSERT_TRUE(cpu_bad.error.has_value()) << "the CPU executor raised nothing";
  EXPECT_EQ(std::string(cpu_bad.error->what()), message);
  DeviceRunner gpu(p, bad);
  const int64_t before = gpu.program().index_check_launches();
  for (int repeat = 0; repeat < 2; ++repeat) {
    const Outcome gpu_bad = gpu.run(bad);
    ASSERT_TRUE(gpu_bad.error.has_value()) << "no error on the GPU (repeat " << repeat << ")";
    EXPECT_EQ(std::string(gpu_bad.error->what()), std::string(cpu_bad.error->what()));
    EXPECT_EQ(gpu_bad.error->kind(), cpu_bad.error->kind());
    EXPECT_EQ(gpu_bad.error->loc().line, cpu_bad.error->loc().line);
    EXPECT_EQ(gpu_bad.error->loc().col, cpu_bad.error->loc().col);
  }
  EXPECT_GT(gpu.program().index_check_launches(), before);
  const Outcome cpu_good = on_cpu(p, good);
  ASSERT_FALSE(cpu_good.error.has_value()) << cpu_good.error->what();
  const Outcome gpu_good = gpu.run(good);
  ASSERT_FALSE(gpu_good.error.has_value()) << gpu_good.error->what();
  ASSERT_EQ(gpu_good.outputs.size(), cpu_good.outputs.size());
  for (size_t o = 0; o < cpu_good.outputs.size(); ++o) {
    ASSERT_EQ(gpu_good.outputs[o].shape(), cpu_good.outputs[o].shape());
    for (int64_t k = 0; k < cpu_good.outputs[o].numel(); ++k)
      ASSERT_EQ(gpu_good.outputs[o].get_linear(k), cpu_good.outputs[o].get_linear(k))
          << "output " << o << " element " << k;
  }
}

constexpr const char* kBad7 = "index 7 is out of bounds for dim 0 of `x` (size 5): `i`[1] = 7";

TEST(GpuUnreadIndex, KOfZero) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  expect_like_cpu("def k0(x: f32[5, 0], w: f32[0, 3], i: i64[2]):\n    return x[i] @ w\n",
                  {contiguous(ramp(DType::F32, {5, 0})), contiguous(ramp(DType::F32, {0, 3})),
                   index_input(DType::I64, {2}, {0, 7})},
                  {contiguous(ramp(DType::F32, {5, 0})), contiguous(ramp(DType::F32, {0, 3})),
                   index_input(DType::I64, {2}, {-5, 4})},
                  kBad7);
}

TEST(GpuUnreadIndex, NOfZero) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  expect_like_cpu("def n0(x: f32[5, 4], w: f32[4, 0], i: i64[2]):\n    return x[i] @ w\n",
                  {contiguous(ramp(DType::F32, {5, 4})), contiguous(ramp(DType::F32, {4, 0})),
                   index_input(DType::I64, {2}, {0, 7})},
                  {contiguous(ramp(DType::F32, {5, 4})), contiguous(ramp(DType::F32, {4, 0})),
                   index_input(DType::I64, {2}, {4, -1})},
                  kBad7);
}

TEST(GpuUnreadIndex, SelectOfAGatherIntoAGemm) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  expect_like_cpu("def s0(x: f32[5, 4], w: f32[4, 3], i: i64[2]):\n    return x[i][0] @ w\n",
                  {contiguous(ramp(DType::F32, {5, 4})), contiguous(ramp(DType::F32, {4, 3})),
                   index_input(DType::I64, {2}, {0, 7})},
                  {contiguous(ramp(DType::F32, {5, 4})), contiguous(ramp(DType::F32, {4, 3})),
                   index_input(DType::I64, {2}, {3, 1})},
                  kBad7);
}

TEST(GpuUnreadIndex, SliceOfAGather) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  expect_like_cpu("def s1(x: f32[5, 4], i: i64[2]):\n    return x[i][0:1] * 2.0\n",
                  {contiguous(ramp(DType::F32, {5, 4})), index_input(DType::I64, {2}, {0, 7})},
                  {contiguous(ramp(DType::F32, {5, 4})), index_input(DType::I64, {2}, {2, 3})},
                  kBad7);
}

// A negative index in range wraps and runs (-1: row 4; -5: row 0).
TEST(GpuUnreadIndex, ANegativeIndexInRangeRuns) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  expect_like_cpu("def s1(x: f32[5, 4], i: i64[2]):\n    return x[i][0:1] * 2.0\n",
                  {contiguous(ramp(DType::F32, {5, 4})), index_input(DType::I64, {2}, {-1, -6})},
                  {contiguous(ramp(DType::F32, {5, 4})), index_input(DType::I64, {2}, {-1, -5})},
                  "index -6 is out of bounds for dim 0 of `x` (size 5): `i`[1] = -6");
}

TEST(GpuUnreadIndex, AnI32Index) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  expect_like_cpu("def s32(x: f32[5, 4], i: i32[3]):\n    return x[i][0:1] * 2.0\n",
                  {contiguous(ramp(DType::F32, {5, 4})), index_input(DType::I32, {3}, {1, 2, -6})},
                  {contiguous(ramp(DType::F32, {5, 4})), index_input(DType::I32, {3}, {-2, 2, 4})},
                  "index -6 is out of bounds for dim 0 of `x` (size 5): `i`[2] = -6");
}

// A 2-D index tensor: the position is printed in its dims, as the
// reference prints it (decoded on the host from the linear position).
TEST(GpuUnreadIndex, ATwoDimIndex) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  expect_like_cpu("def s2d(x: f32[5, 4], w: f32[4, 3], i: i64[2, 3]):\n    return x[i][0] @ w\n",
                  {contiguous(ramp(DType::F32, {5, 4})), contiguous(ramp(DType::F32, {4, 3})),
                   index_input(DType::I64, {2, 3}, {0, 1, 2, 3, 4, 9})},
                  {contiguous(ramp(DType::F32, {5, 4})), contiguous(ramp(DType::F32, {4, 3})),
                   index_input(DType::I64, {2, 3}, {4, 1, -2, 3, 4, 0})},
                  "index 9 is out of bounds for dim 0 of `x` (size 5): `i`[1, 2] = 9");
}

// A strided index tensor (every other element of its storage): the check
// reads it through the call's strides. Read contiguously, position 1 would
// be 7; through the strides it is 9.
TEST(GpuUnreadIndex, AStridedIndex) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  Input bad = index_input(DType::I64, {4}, {0, 7, 9, 7});
  bad.shape = {2};
  bad.strides = {2};
  Input good = index_input(DType::I64, {4}, {3, 70, -2, 70});
  good.shape = {2};
  good.strides = {2};
  expect_like_cpu("def st(x: f32[5, 4], i: i64[2]):\n    return x[i][0:1] * 2.0\n",
                  {contiguous(ramp(DType::F32, {5, 4})), bad},
                  {contiguous(ramp(DType::F32, {5, 4})), good},
                  "index 9 is out of bounds for dim 0 of `x` (size 5): `i`[1] = 9");
}

// index_select takes [0, size) only: a negative index is out of range (the
// message adds the note the CPU's has).
TEST(GpuUnreadIndex, IndexSelectRefusesANegativeIndex) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  const std::string source =
      "def sel(x: f32[5, 4], i: i64[2]):\n    return torch.index_select(x, 0, i)[0:1] * 2.0\n";
  const std::vector<Input> bad = {contiguous(ramp(DType::F32, {5, 4})),
                                  index_input(DType::I64, {2}, {0, -1})};
  const Outcome cpu = on_cpu(parse_program(source, "unread.tfs"), bad);
  ASSERT_TRUE(cpu.error.has_value());
  expect_like_cpu(source, bad,
                  {contiguous(ramp(DType::F32, {5, 4})), index_input(DType::I64, {2}, {4, 0})},
                  cpu.error->what());
  EXPECT_EQ(std::string(cpu.error->what())
                .rfind("index -1 is out of bounds for dim 0 of `x` (size 5): `i`[1] = -1", 0),
            0u)
      << cpu.error->what();
}

// A gather of a gather: x[i][j] reads only the rows of x[i] that j picks.
TEST(GpuUnreadIndex, AGatherOfAGather) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  expect_like_cpu("def gg(x: f32[5, 4], i: i64[3], j: i64[2]):\n    return x[i][j] * 2.0\n",
                  {contiguous(ramp(DType::F32, {5, 4})), index_input(DType::I64, {3}, {0, 1, 8}),
                   index_input(DType::I64, {2}, {0, 1})},
                  {contiguous(ramp(DType::F32, {5, 4})), index_input(DType::I64, {3}, {4, -5, 3}),
                   index_input(DType::I64, {2}, {2, -3})},
                  "index 8 is out of bounds for dim 0 of `x` (size 5): `i`[2] = 8");
}

// Several failing positions over many blocks: the lowest is reported, on
// every run (the CPU executor's choice).
TEST(GpuUnreadIndex, TheLowestFailingPositionIsReported) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  std::vector<int64_t> values(50000, 2);
  values[31234] = 5;
  values[4321 * 10] = -6;
  values[49999] = 100;
  expect_like_cpu("def many(x: f32[5, 0], w: f32[0, 3], i: i64[50000]):\n    return x[i] @ w\n",
                  {contiguous(ramp(DType::F32, {5, 0})), contiguous(ramp(DType::F32, {0, 3})),
                   index_input(DType::I64, {50000}, values)},
                  {contiguous(ramp(DType::F32, {5, 0})), contiguous(ramp(DType::F32, {0, 3})),
                   index_input(DType::I64, {50000}, std::vector<int64_t>(50000, -5))},
                  "index 5 is out of bounds for dim 0 of `x` (size 5): `i`[31234] = 5");
}

// Where no index can go unread (every gathered row is read), the call
// launches no check: the common case costs nothing. An index out of range
// there is the kernel's own check, with the same error.
TEST(GpuUnreadIndex, NoCheckIsLaunchedWhereEveryIndexIsRead) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  const Program p = parse_program(
      "def g(x: f32[5, 4], w: f32[4, 3], i: i64[2]):\n    return x[i] @ w\n", "unread.tfs");
  const std::vector<Input> good = {contiguous(ramp(DType::F32, {5, 4})),
                                   contiguous(ramp(DType::F32, {4, 3})),
                                   index_input(DType::I64, {2}, {4, -5})};
  DeviceRunner gpu(p, good);
  for (int repeat = 0; repeat < 3; ++repeat) {
    const Outcome o = gpu.run(good);
    ASSERT_FALSE(o.error.has_value()) << o.error->what();
  }
  EXPECT_EQ(gpu.program().index_check_launches(), 0);
  const std::vector<Input> bad = {contiguous(ramp(DType::F32, {5, 4})),
                                  contiguous(ramp(DType::F32, {4, 3})),
                                  index_input(DType::I64, {2}, {0, 7})};
  const Outcome o = gpu.run(bad);
  ASSERT_TRUE(o.error.has_value());
  EXPECT_EQ(std::string(o.error->what()), kBad7);
  EXPECT_EQ(gpu.program().index_check_launches(), 0);
}

// With symbolic dims the condition is decided per call: K = 4 launches no
// check, K = 0 does (and catches an index the empty GEMM does not read).
TEST(GpuUnreadIndex, TheConditionIsDecidedPerCall) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  const std::string source =
      "def sym(x: f32[5, K], w: f32[K, 3], i: i64[M]):\n    return x[i] @ w\n";
  const Program p = parse_program(source, "unread.tfs");
  auto inputs = [](int64_t k, std::vector<int64_t> idx) {
    const int64_t m = static_cast<int64_t>(idx.size());
    return std::vector<Input>{contiguous(ramp(DType::F32, {5, k})),
                              contiguous(ramp(DType::F32, {k, 3})),
                              index_input(DType::I64, {m}, idx)};
  };
  DeviceRunner gpu(p, inputs(4, {1, 2, 3}));
  ASSERT_FALSE(gpu.run(inputs(4, {1, 2, 3})).error.has_value());
  EXPECT_EQ(gpu.program().index_check_launches(), 0);
  const Outcome bad = gpu.run(inputs(0, {0, 1, 2, 7}));
  ASSERT_TRUE(bad.error.has_value());
  const Outcome cpu = on_cpu(p, inputs(0, {0, 1, 2, 7}));
  ASSERT_TRUE(cpu.error.has_value());
  EXPECT_EQ(std::string(bad.error->what()), std::string(cpu.error->what()));
  EXPECT_EQ(std::string(bad.error->what()),
            "index 7 is out of bounds for dim 0 of `x` (size 5): `i`[3] = 7");
  EXPECT_EQ(gpu.program().index_check_launches(), 1);
  ASSERT_FALSE(gpu.run(inputs(0, {0, 1, -5})).error.has_value());
  EXPECT_EQ(gpu.program().index_check_launches(), 2);
  ASSERT_FALSE(gpu.run(inputs(4, {1, 2})).error.has_value());
  EXPECT_EQ(gpu.program().index_check_launches(), 2);
}

// Through the Python package's and the C API's path (Callable with CUDA
// tensors, check="sync"): the same error.
TEST(GpuUnreadIndex, ThroughTheCallable) {
  TILEFUSE_SKIP_WITHOUT_GPU();
  cuda::Device& dev = cuda_device(0);
  Callable c("def k0(x: f32[5, 0], w: f32[0, 3], i: i64[2]):\n    return x[i] @ w\n", "unread.tfs",
             {});
  cuda::DeviceBuffer x(dev, 16), w(dev, 16), i(dev, 16), out(dev, 2 * 3 * 4);
  auto tensor = [](const cuda::DeviceBuffer& b, DType dt, Shape shape) {
    CallTensor t;
    t.device = DeviceKind::kCuda;
    t.device_id = 0;
    t.data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(b.ptr()));
    t.dtype = dt;
    t.strides = contiguous_strides(shape);
    t.shape = std::move(shape);
    return t;
  };
  const std::vector<CallTensor> ins = {tensor(x, DType::F32, {5, 0}), tensor(w, DType::F32, {0, 3}),
                                       tensor(i, DType::I64, {2})};
  const std::vector<CallTensor> outs = {tensor(out, DType::F32, {2, 3})};
  CallContext sync;
  sync.sync = true;
  i.upload(std::vector<int64_t>{0, 7});
  try {
    c.call(ins, outs, sync);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), kBad7);
  }
  i.upload(std::vector<int64_t>{-5, 4});
  out.memset(0xFF);
  c.call(ins, outs, sync);
  std::vector<float> host(6, 1.0f);
  out.copy_to_host(host.data(), 6 * 4);
  for (float v : host) EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace tilefuse::driver
