// torch.maximum / torch.minimum on floats: one rule in every engine
// (core/dtype.h float_maximum / float_minimum): a NaN operand gives the
// canonical quiet NaN, and -0 < +0, so a +-0 tie gives the same zero in
// either operand order. The reference evaluator, the CPU executor (both
// plans) and constant folding agree bit for bit; the CUDA helpers are held
// to the same rule by tests/unit/runtime/device_numeric_test.cpp.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "driver/compile.h"
#include "driver/execute.h"
#include "reference/eval.h"

namespace tilefuse {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The bytes of element i.
std::string element_bits(const Tensor& t, int64_t i) {
  const int size = dtype_size(t.dtype());
  std::string s(static_cast<size_t>(size), '\0');
  std::memcpy(s.data(), t.contiguous().data_ptr() + i * size, static_cast<size_t>(size));
  return s;
}

std::string hex(const std::string& bytes) {
  std::string s = "0x";
  for (size_t i = bytes.size(); i-- > 0;) s += fmt::format("{:02x}", static_cast<uint8_t>(bytes[i]));
  return s;
}

TEST(FloatMinMax, SignedZerosTieTheSameWayInEitherOrder) {
  EXPECT_FALSE(std::signbit(float_maximum(-0.0, 0.0)));
  EXPECT_FALSE(std::signbit(float_maximum(0.0, -0.0)));
  EXPECT_TRUE(std::signbit(float_minimum(-0.0, 0.0)));
  EXPECT_TRUE(std::signbit(float_minimum(0.0, -0.0)));
  EXPECT_FALSE(std::signbit(float_maximum(-0.0f, 0.0f)));
  EXPECT_FALSE(std::signbit(float_maximum(0.0f, -0.0f)));
  EXPECT_TRUE(std::signbit(float_minimum(-0.0f, 0.0f)));
  EXPECT_TRUE(std::signbit(float_minimum(0.0f, -0.0f)));
  EXPECT_TRUE(std::signbit(float_maximum(-0.0, -0.0)));
  EXPECT_FALSE(std::signbit(float_minimum(0.0, 0.0)));
  EXPECT_EQ(float_maximum(-1.0, 2.0), 2.0);
  EXPECT_EQ(float_minimum(-1.0, 2.0), -1.0);
  EXPECT_EQ(float_maximum(-kInf, -0.0), 0.0);
  EXPECT_EQ(float_minimum(kInf, 3.0), 3.0);
}

TEST(FloatMinMax, ANaNOperandGivesThePositiveQuietNaN) {
  const float neg_nan = -std::numeric_limits<float>::quiet_NaN();
  for (float r : {float_maximum(neg_nan, 1.0f), float_maximum(1.0f, neg_nan),
                  float_minimum(neg_nan, 1.0f), float_minimum(1.0f, neg_nan)}) {
    uint32_t bits;
    std::memcpy(&bits, &r, 4);
    EXPECT_EQ(bits, 0x7FC00000u);
  }
  const double r = float_maximum(-kNaN, -kNaN);
  uint64_t bits;
  std::memcpy(&bits, &r, 8);
  EXPECT_EQ(bits, 0x7FF8000000000000ull);
}

// maximum and minimum of a[i], b[i] on every engine, against the rule.
TEST(FloatMinMax, ReferenceAndExecutorAgreeOnZerosAndNaNs) {
  const std::vector<std::pair<double, double>> pairs = {
      {-0.0, 0.0}, {0.0, -0.0}, {-0.0, -0.0}, {0.0, 0.0},   {-kNaN, 1.0}, {1.0, -kNaN},
      {kNaN, kNaN}, {1.0, 2.0}, {2.0, 1.0},   {-kInf, -0.0}, {0.0, -kInf}, {-3.5, -0.0}};
  const int64_t n = static_cast<int64_t>(pairs.size());
  for (DType dt : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8E4M3, DType::F8E5M2}) {
    Graph g;
    const ValueId a = g.parameter("a", dt, {n}, std::nullopt, {});
    const ValueId b = g.parameter("b", dt, {n}, std::nullopt, {});
    g.add_output(g.binary(BinaryOp::Maximum, a, b, {}));
    g.add_output(g.binary(BinaryOp::Minimum, a, b, {}));
    Tensor ta = Tensor::empty(dt, {n}), tb = Tensor::empty(dt, {n});
    for (int64_t i = 0; i < n; ++i) {
      ta.set_linear(i, pairs[i].first);
      tb.set_linear(i, pairs[i].second);
    }
    std::vector<std::pair<std::string, std::vector<Tensor>>> engines;
    engines.emplace_back("reference", evaluate(g, {ta, tb}));
    for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
      driver::CompileOptions co;
      co.plan = plan;
      engines.emplace_back("executor, " + std::string(plan_kind_name(plan)) + " plan",
                           driver::execute(driver::compile(g, co), {ta, tb}));
    }
    for (int64_t i = 0; i < n; ++i) {
      // The operands as stored (an f8e4m3 has no infinity: -inf is its NaN).
      const double x = ta.get_linear(i), y = tb.get_linear(i);
      Tensor want = Tensor::empty(dt, {2});
      want.set_linear(0, float_maximum(x, y));
      want.set_linear(1, float_minimum(x, y));
      for (const auto& [name, got] : engines) {
        ASSERT_EQ(got.size(), 2u);
        for (int k = 0; k < 2; ++k)
          EXPECT_EQ(hex(element_bits(got[k], i)), hex(element_bits(want, k)))
              << name << ": " << dtype_name(dt) << " " << (k ? "minimum" : "maximum") << "("
              << x << ", " << y << ")";
      }
    }
  }
}

}  // namespace
}  // namespace tilefuse
