// A comparison of an integer tensor with a Python int that its dtype cannot
// hold: PyTorch computes every comparison in the promoted type, and a wrapped
// number does not widen an integer tensor, so the number is converted to the
// tensor's dtype first, wrapping modulo 2^bits as c10's static_cast does
// (`torch.tensor([0], dtype=torch.uint8) == 256` is True, `int8(1) < 256` is
// False: pytorch/pytorch#101653, #114679; PR #78881 removed the overflow
// check). The same conversion as `u8 + 300` and `torch.where(c, u8, 300)`.
// Every engine must give that, not the comparison of the exact values.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "driver/compile.h"
#include "driver/execute.h"
#include "reference/eval.h"

namespace tilefuse {
namespace {

// `v` stored in `dt` (an integer dtype): two's complement, modulo 2^bits.
int64_t wrap_to(DType dt, int64_t v) {
  switch (dt) {
    case DType::I8:
      return static_cast<int8_t>(static_cast<uint8_t>(static_cast<uint64_t>(v)));
    case DType::U8:
      return static_cast<uint8_t>(static_cast<uint64_t>(v));
    case DType::I32:
      return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
    default:
      return v;
  }
}

bool compare(BinaryOp op, int64_t a, int64_t b) {
  switch (op) {
    case BinaryOp::Eq: return a == b;
    case BinaryOp::Ne: return a != b;
    case BinaryOp::Lt: return a < b;
    case BinaryOp::Le: return a <= b;
    case BinaryOp::Gt: return a > b;
    default: return a >= b;
  }
}

TEST(IntCompare, OutOfRangeNumberWrapsToTheTensorsDtypeInEveryEngine) {
  std::mt19937_64 rng(7);
  const std::vector<BinaryOp> ops = {BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt,
                                     BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge};
  struct Case {
    DType dt;
    std::vector<int64_t> numbers;
  };
  const std::vector<Case> cases = {
      {DType::U8, {256, 300, -1, -19, 511, 255, 0}},
      {DType::I8, {200, 256, -129, 127, -128, 1000}},
      {DType::I32, {3000000000LL, 2147483648LL, -2147483649LL, 4294967296LL, 7}},
  };
  for (const Case& c : cases) {
    const int64_t n = 64;
    Tensor x = Tensor::empty(c.dt, {n});
    for (int64_t i = 0; i < n; ++i) {
      // Random values, and the wrapped numbers themselves so that == hits.
      const int64_t v = i < static_cast<int64_t>(c.numbers.size())
                            ? wrap_to(c.dt, c.numbers[static_cast<size_t>(i)])
                            : wrap_to(c.dt, static_cast<int64_t>(rng()));
      x.set_linear(i, static_cast<double>(v));
    }
    for (int64_t number : c.numbers) {
      for (bool number_first : {false, true}) {
        Graph g;
        const ValueId p = g.parameter("x", c.dt, {n}, std::nullopt, {});
        for (BinaryOp op : ops) {
          const ValueId s = g.int_scalar(number, DType::I64, {});
          g.add_output(number_first ? g.binary(op, s, p, {}) : g.binary(op, p, s, {}));
        }
        std::vector<std::pair<std::string, std::vector<Tensor>>> engines;
        engines.emplace_back("reference", evaluate(g, {x}));
        for (PlanKind plan : {PlanKind::kFused, PlanKind::kUnfused}) {
          driver::CompileOptions co;
          co.plan = plan;
          engines.emplace_back("executor, " + std::string(plan_kind_name(plan)) + " plan",
                               driver::execute(driver::compile(g, co), {x}));
        }
        const int64_t w = wrap_to(c.dt, number);
        for (const auto& [name, got] : engines) {
          ASSERT_EQ(got.size(), ops.size());
          for (size_t k = 0; k < ops.size(); ++k) {
            for (int64_t i = 0; i < n; ++i) {
              const auto v = static_cast<int64_t>(x.get_linear(i));
              const bool want = number_first ? compare(ops[k], w, v) : compare(ops[k], v, w);
              ASSERT_EQ(got[k].get_linear(i) != 0, want)
                  << name << ": " << dtype_name(c.dt) << " " << binary_op_name(ops[k]) << " with "
                  << number << (number_first ? " first" : " second") << " (wraps to " << w
                  << "), element " << v;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tilefuse
