// driver::Callable on the CPU: what a call checks before anything runs (the
// argument counts, the overlaps of its tensors), with the C++ API that the
// C API and the Python package call.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "driver/callable.h"

namespace tilefuse::driver {
namespace {

CallTensor cpu_tensor(float* data, Shape shape) {
  CallTensor t;
  t.device = DeviceKind::kCpu;
  t.data = data;
  t.dtype = DType::F32;
  t.strides = contiguous_strides(shape);
  t.shape = std::move(shape);
  return t;
}

CallableOptions cpu_options() {
  CallableOptions o;
  o.device = "cpu";
  o.cpu_threads = 1;
  return o;
}

std::string call_error(Callable& c, const std::vector<CallTensor>& in,
                       const std::vector<CallTensor>& out) {
  try {
    c.call(in, out, {});
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// More inputs than parameters: the layout check named each input by its
// parameter (g.parameters()[i]) before the count was checked, so the third
// input read past the end of the parameter list: a wild ValueId, named in
// the layout error of an extra input whose strides reach past 2^63 bytes
// (or a crash), instead of the count's message.
TEST(Callable, MoreInputsThanParametersIsACountError) {
  Callable c("def f(a: f32[4], b: f32[4]):\n    return a + b\n", "f.tfs", cpu_options());
  std::vector<float> a(4, 1), b(4, 2), extra(4, 3), out(4, 0);
  CallTensor wild = cpu_tensor(extra.data(), {4});
  wild.strides = {int64_t{1} << 62};
  std::string msg;
  try {
    msg = call_error(c, {cpu_tensor(a.data(), {4}), cpu_tensor(b.data(), {4}), wild},
                     {cpu_tensor(out.data(), {4})});
  } catch (const std::exception& e) {
    msg = std::string("not a UserError: ") + e.what();
  }
  EXPECT_EQ(msg, "the program takes 2 inputs, got 3");
  // And the program still runs.
  ASSERT_EQ(call_error(c, {cpu_tensor(a.data(), {4}), cpu_tensor(b.data(), {4})},
                       {cpu_tensor(out.data(), {4})}),
            "");
  EXPECT_EQ(out, std::vector<float>(4, 3));
}

// A tensor with no elements addresses no memory: an empty input (or output)
// whose pointer lies inside an output's bytes, as an empty slice of the
// output's buffer does, was refused as overlapping it.
TEST(Callable, AnEmptyTensorOverlapsNothing) {
  Callable c("def f(a: f32[8], e: f32[N]):\n    return a * 2.0, e + 1.0\n", "f.tfs", cpu_options());
  std::vector<float> a(8, 1.5f), buffer(16, 0.0f);
  // out0 is buffer[0:8]; the empty input e and the empty out1 point at buffer[4].
  const CallTensor out0 = cpu_tensor(buffer.data(), {8});
  const CallTensor empty = cpu_tensor(buffer.data() + 4, {0});
  EXPECT_EQ(call_error(c, {cpu_tensor(a.data(), {8}), empty}, {out0, cpu_tensor(nullptr, {0})}),
            "");
  EXPECT_EQ(std::vector<float>(buffer.begin(), buffer.begin() + 8), std::vector<float>(8, 3.0f));
  EXPECT_EQ(call_error(c, {cpu_tensor(a.data(), {8}), cpu_tensor(nullptr, {0})}, {out0, empty}),
            "");
  // An output that does overlap an input is still refused.
  const std::string msg =
      call_error(c, {cpu_tensor(buffer.data() + 4, {8}), empty}, {out0, cpu_tensor(nullptr, {0})});
  EXPECT_EQ(msg, "output `out0` overlaps input `a`; outputs must not share memory with inputs");
}

// A symbolic program with a computed index (`x[i + 0]`) and a slice: its
// indices may go unread, so they are checked before the kernels. That check
// evaluated the whole program in the reference evaluator (the bound graph),
// on every call: here the 2^40-element `z.expand(...) * 2.0` that the fused
// plan never materializes (it computes the one row the slice keeps), so a
// call with valid indices failed with "out of host memory: cannot allocate
// 4 TiB ... in the reference evaluator" where `tilefuse run` ran it. Only
// the index operands need evaluating; a bad index is still that error.
TEST(Callable, CheckingComputedIndicesEvaluatesOnlyTheIndices) {
  CallableOptions o = cpu_options();
  o.plan = "fused";
  Callable c(
      "def f(x: f32[T, 8], w: f32[8, 4], i: i64[M], z: f32[1, 8]):\n"
      "    return x[i + 0] @ w, (z.expand(137438953472, 8) * 2.0)[0:1]\n",
      "f.tfs", o);
  std::vector<float> x(6 * 8, 1.0f), w(8 * 4, 0.5f), z(8, 3.0f), out0(3 * 4, 0), out1(8, 0);
  std::vector<int64_t> i = {0, 1, 5};
  CallTensor ti = cpu_tensor(nullptr, {3});
  ti.dtype = DType::I64;
  ti.data = i.data();
  const std::vector<CallTensor> in = {cpu_tensor(x.data(), {6, 8}), cpu_tensor(w.data(), {8, 4}),
                                      ti, cpu_tensor(z.data(), {1, 8})};
  const std::vector<CallTensor> out = {cpu_tensor(out0.data(), {3, 4}),
                                       cpu_tensor(out1.data(), {1, 8})};
  ASSERT_EQ(call_error(c, in, out), "");
  EXPECT_EQ(out0, std::vector<float>(12, 4.0f));
  EXPECT_EQ(out1, std::vector<float>(8, 6.0f));
  i[1] = 9;
  EXPECT_EQ(call_error(c, in, out),
            "index 9 is out of bounds for dim 0 of `x` (size 6): (the result of add)[1] = 9");
  // A computed index that no kernel reads (a dead gather) is still checked.
  Callable dead(
      "def f(x: f32[T, 8], w: f32[8, 4], i: i64[M]):\n"
      "    a = x[i * 2]\n"
      "    return x @ w\n",
      "f.tfs", o);
  std::vector<float> out2(6 * 4, 0);
  i = {0, 1, 4};
  EXPECT_EQ(call_error(dead, {in[0], in[1], ti}, {cpu_tensor(out2.data(), {6, 4})}),
            "index 8 is out of bounds for dim 0 of `x` (size 6): (the result of mul)[2] = 8");
  i = {0, 1, 2};
  EXPECT_EQ(call_error(dead, {in[0], in[1], ti}, {cpu_tensor(out2.data(), {6, 4})}), "");
}

// A fixed program called on views of varying pitch (a caller slicing a
// wider buffer): each new pitch compiled a new program, without bound (3,000
// pitches were 3,000 compiles). The first strided layout is compiled as
// constants, a second pitch makes the stride a kernel argument, and every
// later pitch runs on that program, each result right.
TEST(Callable, VaryingPitchesCompileOncePerDimNotPerPitch) {
  Callable c("def f(x: f32[8, 16], w: f32[16, 4]):\n    return x @ w\n", "f.tfs",
             cpu_options());
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> w(16 * 4);
  for (float& v : w) v = u(rng);
  auto run_at = [&](int64_t pitch) {
    SCOPED_TRACE(pitch);
    std::vector<float> buf(static_cast<size_t>(8 * pitch));
    for (float& v : buf) v = u(rng);
    std::vector<float> out(8 * 4, NAN);
    CallTensor x = cpu_tensor(buf.data(), {8, 16});
    x.strides = {pitch, 1};
    ASSERT_EQ(call_error(c, {x, cpu_tensor(w.data(), {16, 4})}, {cpu_tensor(out.data(), {8, 4})}),
              "");
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 4; ++j) {
        double ref = 0;
        for (int k = 0; k < 16; ++k)
          ref += double(buf[static_cast<size_t>(i * pitch + k)]) * double(w[static_cast<size_t>(k * 4 + j)]);
        EXPECT_NEAR(out[static_cast<size_t>(i * 4 + j)], ref, 1e-5) << i << "," << j;
      }
  };
  run_at(16);  // contiguous
  EXPECT_EQ(c.compile_count(), 1);
  run_at(20);  // the first strided layout: its pitch compiled in
  EXPECT_EQ(c.compile_count(), 2);
  run_at(20);
  EXPECT_EQ(c.compile_count(), 2);
  run_at(24);  // a second pitch: the stride at run time from now on
  EXPECT_EQ(c.compile_count(), 3);
  for (int64_t pitch = 25; pitch < 200; pitch += 3)
    if (pitch % 16 != 0) run_at(pitch);
  run_at(20);
  EXPECT_EQ(c.compile_count(), 3);
  run_at(16);  // contiguous again: the first program
  EXPECT_EQ(c.compile_count(), 3);
}

// A call refused for its layout (an address not aligned to its element
// size) recorded its strides as the first layout seen, so the next valid
// call's pitch was taken as a change and compiled with run-time strides.
// explain(inputs) names the layout a call with those inputs would run, as
// a call would observe it, without recording it.
TEST(Callable, ARefusedCallRecordsNoLayout) {
  Callable c("def f(x: f32[8, 16], w: f32[16, 4]):\n    return x @ w\n", "f.tfs",
             cpu_options());
  std::vector<float> buf(8 * 40 + 1, 0.5f), w(16 * 4, 0.25f), out(8 * 4, NAN);
  CallTensor misaligned = cpu_tensor(reinterpret_cast<float*>(
                                         reinterpret_cast<char*>(buf.data()) + 2),
                                     {8, 16});
  misaligned.strides = {20, 1};
  EXPECT_NE(call_error(c, {misaligned, cpu_tensor(w.data(), {16, 4})},
                       {cpu_tensor(out.data(), {8, 4})})
                .find("not a multiple of its element size"),
            std::string::npos);
  CallTensor x = cpu_tensor(buf.data(), {8, 16});
  x.strides = {40, 1};
  const std::vector<CallTensor> in = {x, cpu_tensor(w.data(), {16, 4})};
  EXPECT_EQ(c.explain(&in, "cpu").at("specialization"), "i32 x:[40,1]/16 w:c/16");
  ASSERT_EQ(call_error(c, in, {cpu_tensor(out.data(), {8, 4})}), "");
  EXPECT_EQ(out, std::vector<float>(32, 2.0f));
  EXPECT_EQ(c.compile_count(), 1);
  // explain of a new pitch: the run-time stride a call would now take; the
  // policy is unchanged (the next call at 40 compiles nothing).
  std::vector<CallTensor> in24 = in;
  in24[0].strides = {24, 1};
  EXPECT_EQ(c.explain(&in24, "cpu").at("specialization"), "i32 x:[?,1]/16 w:c/16");
  ASSERT_EQ(call_error(c, in, {cpu_tensor(out.data(), {8, 4})}), "");
  EXPECT_EQ(c.compile_count(), 1);
}

}  // namespace
}  // namespace tilefuse::driver
