// driver::Callable on the CPU: what a call checks before anything runs (the
// argument counts, the overlaps of its tensors), with the C++ API that the
// C API and the Python package call.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tilefuse::driver
