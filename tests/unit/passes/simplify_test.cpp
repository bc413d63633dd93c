// simplify: one case per rule (text in -> simplify -> text out), floor
// division/modulo folding against brute force, a randomized check that
// integer expressions keep their value, and pointer identity.
#include "passes/simplify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <unordered_map>

#include "../tir/test_kernels.h"
#include "pass_test_util.h"
#include "analysis/modulus_remainder.h"
#include "tir/builder.h"
#include "tir/functor.h"

namespace tilefuse::passes {
namespace {

using analysis::modulus_remainder;
using analysis::ModulusRemainder;
using analysis::ModulusRemainderScope;

using namespace tir;  // NOLINT
using testing::expect_body;

// Free vars and buffers the expression cases may use.
struct Env {
  Var x{"x"}, y{"y"}, z{"z"}, w{"w", DType::I64}, f{"f", DType::F32}, g{"g", DType::F32},
      d{"d", DType::F64}, h{"h", DType::F16}, p{"p", DType::Bool}, q{"q", DType::Bool};
  Buffer A = BufferNode::make("A", DType::F32, MemScope::Global, {16});
  std::vector<Var> vars() const { return {x, y, z, w, f, g, d, h, p, q}; }
};

void expect_expr(const std::string& in, const std::string& expected) {
  Env env;
  Expr e = parse_expr(in, env.vars(), {env.A});
  std::string out = print(simplify(e));
  EXPECT_EQ(out, expected) << "--- input: " << in << "\n--- output: " << out
                           << "\n--- expected: " << expected;
}

TEST(Simplify, ConstantFolding) {
  expect_expr("1 + 2*3", "7");
  expect_expr("2147483647 + 1", "-2147483648");  // i32 wraps
  expect_expr("65536*65536", "0");
  expect_expr("100_i8 + 100_i8", "-56_i8");
  expect_expr("200_u8 + 100_u8", "44_u8");
  expect_expr("7/2", "3");
  expect_expr("(0 - 7)/2", "-4");
  expect_expr("7/(0 - 2)", "-4");
  expect_expr("(0 - 7)%2", "1");
  expect_expr("7%(0 - 2)", "-1");
  expect_expr("x/0", "x/0");  // left for the program to hit
  expect_expr("1.5 + 2.25", "3.75");
  expect_expr("1e+20*1e+20", "inf");  // rounds to f32
  expect_expr("1e+20_f64*1e+20_f64", "1e+40_f64");
  expect_expr("nan + 1.0", "nan");
  expect_expr("1.0_f16 + 0.0001_f16", "1.0_f16");
  expect_expr("min(3, 5) + max(3, 5)", "8");
  expect_expr("max(nan, 1.0)", "nan");
  expect_expr("3 < 5 && 2.0 >= nan", "false");
}

// Float min / max fold by the engines' rule (core/dtype.h): -0 < +0 in
// either order, a NaN gives the quiet NaN; max(f, f) stays (f may be a NaN
// of another sign, which max turns into the positive one).
TEST(Simplify, FloatMinMaxFoldLikeTheEngines) {
  auto as_const_float = [](const Expr& e) -> const double* {
    const auto* f = e.as<FloatImmNode>();
    return f ? &f->value : nullptr;
  };
  const Expr pz = make_const(DType::F32, 0.0), nz = make_const(DType::F32, -0.0);
  for (const auto& [a, b] : {std::pair{nz, pz}, std::pair{pz, nz}}) {
    const Expr max_ab = simplify(tir::max(a, b)), min_ab = simplify(tir::min(a, b));
    const double* hi = as_const_float(max_ab);
    const double* lo = as_const_float(min_ab);
    ASSERT_NE(hi, nullptr);
    ASSERT_NE(lo, nullptr);
    EXPECT_FALSE(std::signbit(*hi)) << print(tir::max(a, b));
    EXPECT_TRUE(std::signbit(*lo)) << print(tir::min(a, b));
  }
  const Expr max_nan =
      simplify(tir::max(make_const(DType::F32, -std::nan("")), make_const(DType::F32, 1.0)));
  const double* nan = as_const_float(max_nan);
  ASSERT_NE(nan, nullptr);
  EXPECT_TRUE(std::isnan(*nan) && !std::signbit(*nan));
  expect_expr("max(f, f)", "max(f, f)");
  expect_expr("min(x, x)", "x");
}

TEST(Simplify, Identities) {
  expect_expr("x + 0", "x");
  expect_expr("0 + x", "x");
  expect_expr("x - 0", "x");
  expect_expr("x*1", "x");
  expect_expr("1*x", "x");
  expect_expr("x*0", "0");
  expect_expr("x/1", "x");
  expect_expr("x%1", "0");
  expect_expr("x - x", "0");
  expect_expr("(x + y) - y", "x");
  expect_expr("min(x, x)", "x");
  // Floats: only what is exact for -0.0, inf and NaN.
  expect_expr("f*1.0", "f");
  expect_expr("f/1.0", "f");
  expect_expr("f - 0.0", "f");
  expect_expr("f + -0.0", "f");
  expect_expr("f + 0.0", "f + 0.0");
  expect_expr("f*0.0", "f*0.0");
  expect_expr("f - f", "f - f");
  expect_expr("2.0*f", "f*2.0");
}

TEST(Simplify, Reassociation) {
  expect_expr("3 + (x + 4)", "x + 7");
  expect_expr("(x + 1) + (y + 2)", "x + y + 3");
  expect_expr("x - 5", "x + -5");
  expect_expr("(x + 5) - x", "5");
  expect_expr("(x + 5) - (y + 2)", "x - y + 3");
  expect_expr("10 - (x + 3)", "7 - x");
  expect_expr("2*(x + 3)", "x*2 + 6");
  expect_expr("(x*4)*8", "x*32");
  expect_expr("(x + 2147483647) + 1", "x + -2147483648");
}

TEST(Simplify, Comparisons) {
  expect_expr("x < x", "false");
  expect_expr("x <= x", "true");
  expect_expr("x == x", "true");
  expect_expr("x != x", "false");
  expect_expr("f < f", "f < f");  // NaN
  expect_expr("f == f", "f == f");
  expect_expr("3 < x", "x > 3");
  expect_expr("x % 8 < 8", "true");
  expect_expr("x % 8 >= 0", "true");
  expect_expr("i64(x) < 2147483648_i64", "true");
  expect_expr("!(x < y)", "x >= y");
  expect_expr("!(x >= y)", "x < y");
  expect_expr("!(f < g)", "!(f < g)");  // !(NaN < 1) differs from NaN >= 1
  expect_expr("!(f == g)", "f != g");
  expect_expr("!!p", "p");
  expect_expr("!true", "false");
}

TEST(Simplify, SelectAndLogic) {
  expect_expr("select(true, x, y)", "x");
  expect_expr("select(false, x, y)", "y");
  expect_expr("select(p, x, x)", "x");
  expect_expr("select(p, true, false)", "p");
  expect_expr("select(p, false, true)", "!p");
  expect_expr("select(x % 4 < 4, x, y)", "x");
  expect_expr("p && true", "p");
  expect_expr("true && p", "p");
  expect_expr("p && false", "false");
  expect_expr("p || true", "true");
  expect_expr("p || false", "p");
  expect_expr("p && p", "p");
}

TEST(Simplify, Casts) {
  expect_expr("i64(3)", "3_i64");
  expect_expr("i32(x)", "x");
  expect_expr("i32(i64(x))", "x");
  expect_expr("i64(i32(w))", "i64(i32(w))");  // narrowing first loses bits
  expect_expr("i8(300)", "44_i8");
  expect_expr("u8(0 - 1)", "255_u8");
  expect_expr("i32(2.7)", "2");
  expect_expr("i32(0.0 - 2.7)", "-2");
  expect_expr("i32(nan)", "0");
  expect_expr("i32(true)", "1");
  expect_expr("f16(0.1)", "0.099975586_f16");  // f16 has 11 significant bits
  expect_expr("f32(16777217)", "16777216.0");  // one rounding from the exact integer
  expect_expr("f64(f32(h))", "f64(h)");        // f16 -> f32 is lossless
  expect_expr("f16(f32(d))", "f16(f32(d))");   // two roundings are not one
  expect_expr("f32(f16(f))", "f32(f16(f))");
}

TEST(Simplify, Calls) {
  expect_expr("neg(3)", "-3");
  expect_expr("abs(0.0 - 2.5)", "2.5");
  expect_expr("floor(2.5) + ceil(2.5)", "5.0");
  expect_expr("sqrt(4.0)", "2.0");
  expect_expr("neg(neg(f))", "f");
  expect_expr("exp(0.0)", "exp(0.0)");  // the device libm decides
}

TEST(Simplify, Masks) {
  expect_expr("load(A, [x], mask=true, other=1.0)", "A[x]");
  expect_expr("load(A, [x], mask=(p && true))", "load(A, [x], mask=p)");
  expect_expr("load(A, [x], mask=false, other=1.5)", "1.5");
  expect_expr("load(A, [x], mask=(x % 16 > 20))", "0.0");
  expect_expr("load(A, [x % 16], mask=(x % 16 < 16))", "A[x%16]");
}

TEST(Simplify, ModulusRemainderLattice) {
  expect_expr("(x*8 + 3) % 8", "3");
  expect_expr("(x*8 - 5) % 8", "3");
  expect_expr("(x*16 + y*8 + 4) % 8", "4");
  expect_expr("(x*8 + 3) % 4", "3");
  expect_expr("(x*8 + y) % 8", "y%8");
  expect_expr("(x*8 + y + 5) % 8", "(y + 5)%8");
  // With wrapping, 3 does not divide x*3 + 1's value: left alone.
  expect_expr("(x*3 + 1) % 3", "(x*3 + 1)%3");
  expect_expr("(x % 16) % 8", "x%8");
  expect_expr("(x/4)/8", "x/32");
  // Dividing needs a sum that cannot wrap; x is any i32 here.
  expect_expr("(x*8 + 3)/8", "(x*8 + 3)/8");

  Var x("x"), y("y");
  auto mr = [](const Expr& e) { return modulus_remainder(e); };
  EXPECT_EQ(mr(x * 8 + 3), (ModulusRemainder{8, 3}));
  EXPECT_EQ(mr(x * 8 - 3), (ModulusRemainder{8, 5}));
  EXPECT_EQ(mr(x * 6 + y * 4), (ModulusRemainder{2, 0}));
  EXPECT_EQ(mr(x * 3), ModulusRemainder::unknown());
  EXPECT_EQ(mr((x * 8 + 4) / 4), (ModulusRemainder{2, 1}));
  EXPECT_EQ(mr(select(x < y, x * 8 + 2, y * 4 + 6)), (ModulusRemainder{4, 2}));
  EXPECT_EQ(mr((x * 16 + 5) % 8), ModulusRemainder::constant(5));
  EXPECT_EQ(mr(make_int(DType::I32, 7) * 6), ModulusRemainder::constant(42));
  ModulusRemainderScope scope{{x.get(), {4, 1}}};
  EXPECT_EQ(modulus_remainder(x * 2, scope), (ModulusRemainder{8, 2}));
}

auto simplify_kernel = [](const Kernel& k) { return simplify(k); };

TEST(Simplify, RangesFromLoops) {
  expect_body(simplify_kernel, R"(  for i in serial(0, 128) {
    check(i < 128 && i >= 0, code=1, msg="oob")
    out[i] = x[i], mask=(i < 256)
    iout[i] = select(p < 4, i, 0)
  }
)",
              R"(  for i in serial(0, 128) {
    out[i] = x[i]
    iout[i] = i
  }
)");
  // (i*32 + j)/32 -> i and % 32 -> j for j in [0, 32); negative mins too.
  expect_body(simplify_kernel, R"(  for i in serial(0, 4) {
    for j in serial(0, 32) {
      iout[(i*32 + j)/32] = (i*32 + j)%32
    }
  }
  for a in serial(0 - 5, 10) {
    iout[0] = (a*8 + 3)/8 + (a*8 - 3)/8
    iout[1] = (a*8 + n)/8
  }
)",
              R"(  for i in serial(0, 4) {
    for j in serial(0, 32) {
      iout[i] = j
    }
  }
  for a in serial(-5, 10) {
    iout[0] = a + a + -1
    iout[1] = (a*8 + n)/8
  }
)");
}

TEST(Simplify, Statements) {
  expect_body(simplify_kernel, R"(  for i in serial(0, 0) {
    out[i] = 1.0
  }
  for i_1 in serial(3, 1) {
    iout[i_1] = i_1*2
  }
  if 1 < 2 {
    iout[0] = 1
  } else {
    iout[0] = 2
  }
  if n < n {
    iout[1] = 1
  } else {
    iout[1] = 2
  }
  if 2 < 1 {
    iout[2] = 1
  }
  alloc f: fragment f32[1]
  for j in parallel(0, 1) {
    f[j] = 0.0
  }
  let c = 5
  let v = n
  iout[3] = c + v*1
  out[4] = 1.0, mask=false
)",
              R"(  iout[3] = 6
  iout[0] = 1
  iout[1] = 2
  alloc f: fragment f32[1]
  for j in parallel(0, 1) {
    f[j] = 0.0
  }
  iout[3] = n + 5
)");
}

TEST(Simplify, FactsFromIfConditions) {
  expect_body(simplify_kernel, R"(  for i in serial(0, 128) {
    if i < 64 {
      iout[i] = select(i < 100, 1, 2)
      out[i] = load(x, [i], mask=(i < 64 && n > 0))
    } else {
      iout[i] = select(i >= 64, 3, 4)
    }
    if n > 0 && i < n {
      iout[0] = select(i < n, 5, 6) + select(n > 0, 1, 0)
    } else {
      iout[0] = select(i < n, 7, 8)
    }
    check(i < n, code=1, msg="i")
    iout[1] = select(i < n, 1, 0)
    if idx[0] > 0 {
      iout[2] = select(idx[0] > 0, 1, 0)
    }
  }
)",
              R"(  for i in serial(0, 128) {
    if i < 64 {
      iout[i] = 1
      out[i] = load(x, [i], mask=(n > 0))
    } else {
      iout[i] = 3
    }
    if n > 0 && i < n {
      iout[0] = 6
    } else {
      iout[0] = select(i < n, 7, 8)
    }
    check(i < n, code=1, msg="i")
    iout[1] = select(i < n, 1, 0)
    if idx[0] > 0 {
      iout[2] = select(idx[0] > 0, 1, 0)
    }
  }
)");
}

TEST(Simplify, FactsFromLetsCopiesGridAndHooks) {
  expect_body(simplify_kernel, R"(  let r = n%8
  let b = n*8 + 3
  iout[0] = select(r < 8, b%8, 0)
  iout[1] = (b + 5)%8 + p/4
  alloc s: shared f32[4, 8]
  copy (i: 4, j: 8) s[i, j] = load(x, [i*8 + j], mask=(i*8 + j < 32 && p < 4))
  out[2] = load_input<f32>("A", [p], mask=(p >= 0)) + load_input<f32>("A", [r], mask=(r < 0))
  check(r < 8, code=1, msg="r")
)",
              R"(  let r = n%8
  let b = n*8 + 3
  iout[0] = 3
  iout[1] = 0
  alloc s: shared f32[4, 8]
  copy (i: 4, j: 8) s[i, j] = x[i*8 + j]
  out[2] = load_input<f32>("A", [p]) + 0.0
)");
}

// Floor division and modulo of constants against a brute-force evaluation
// from the definition: q = floor(a / b), r = a - b*q.
TEST(Simplify, FloorDivModMatchBruteForce) {
  for (int a = -40; a <= 40; ++a) {
    for (int b = -9; b <= 9; ++b) {
      if (b == 0) continue;
      int64_t q = static_cast<int64_t>(std::floor(static_cast<double>(a) / b));
      int64_t r = a - b * q;
      Expr div = simplify(DivNode::make(make_int(DType::I32, a), make_int(DType::I32, b)));
      Expr mod = simplify(ModNode::make(make_int(DType::I32, a), make_int(DType::I32, b)));
      ASSERT_TRUE(as_const_int(div) && as_const_int(mod)) << a << " " << b;
      EXPECT_EQ(*as_const_int(div), q) << a << "/" << b;
      EXPECT_EQ(*as_const_int(mod), r) << a << "%" << b;
      // And through the lattice / range rules: (v*b' + a) with v in a loop.
    }
  }
  // INT_MIN / -1 wraps back to INT_MIN.
  EXPECT_EQ(print(simplify(parse_expr("-128_i8/-1_i8"))), "-128_i8");
  EXPECT_EQ(print(simplify(parse_expr("-2147483648/-1"))), "-2147483648");
}

// ---- randomized value preservation ---------------------------------------------

// A tiny evaluator for i32/i64/bool expressions with the IR's semantics.
int64_t wrap_to(DType dt, __int128 v) {
  switch (dt) {
    case DType::Bool:
      return v != 0;
    case DType::I32:
      return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
    case DType::I64:
      return static_cast<int64_t>(static_cast<uint64_t>(v));
    default:
      ADD_FAILURE() << "dtype";
      return 0;
  }
}

int64_t eval(const Expr& e, const std::unordered_map<const VarNode*, int64_t>& env) {
  DType dt = e.dtype();
  if (const int64_t* c = as_const_int(e)) return *c;
  if (const auto* v = e.as<VarNode>()) return env.at(v);
  auto bin = [&](const auto* op) { return std::pair(eval(op->a, env), eval(op->b, env)); };
  switch (e.kind()) {
    case ExprKind::Add: {
      auto [a, b] = bin(e.as<AddNode>());
      return wrap_to(dt, __int128(a) + b);
    }
    case ExprKind::Sub: {
      auto [a, b] = bin(e.as<SubNode>());
      return wrap_to(dt, __int128(a) - b);
    }
    case ExprKind::Mul: {
      auto [a, b] = bin(e.as<MulNode>());
      return wrap_to(dt, __int128(a) * b);
    }
    case ExprKind::Div:
    case ExprKind::Mod: {
      auto [a, b] = e.kind() == ExprKind::Div ? bin(e.as<DivNode>()) : bin(e.as<ModNode>());
      __int128 q = __int128(a) / b;
      if (__int128(a) % b != 0 && ((a < 0) != (b < 0))) --q;
      return wrap_to(dt, e.kind() == ExprKind::Div ? q : __int128(a) - q * b);
    }
    case ExprKind::Min: {
      auto [a, b] = bin(e.as<MinNode>());
      return std::min(a, b);
    }
    case ExprKind::Max: {
      auto [a, b] = bin(e.as<MaxNode>());
      return std::max(a, b);
    }
    case ExprKind::EQ: {
      auto [a, b] = bin(e.as<EQNode>());
      return a == b;
    }
    case ExprKind::NE: {
      auto [a, b] = bin(e.as<NENode>());
      return a != b;
    }
    case ExprKind::LT: {
      auto [a, b] = bin(e.as<LTNode>());
      return a < b;
    }
    case ExprKind::LE: {
      auto [a, b] = bin(e.as<LENode>());
      return a <= b;
    }
    case ExprKind::GT: {
      auto [a, b] = bin(e.as<GTNode>());
      return a > b;
    }
    case ExprKind::GE: {
      auto [a, b] = bin(e.as<GENode>());
      return a >= b;
    }
    case ExprKind::And: {
      auto [a, b] = bin(e.as<AndNode>());
      return a && b;
    }
    case ExprKind::Or: {
      auto [a, b] = bin(e.as<OrNode>());
      return a || b;
    }
    case ExprKind::Not:
      return !eval(e.as<NotNode>()->a, env);
    case ExprKind::Select: {
      const auto* op = e.as<SelectNode>();
      int64_t c = eval(op->cond, env), t = eval(op->true_value, env),
              f = eval(op->false_value, env);
      return c ? t : f;
    }
    case ExprKind::Cast:
      return wrap_to(dt, eval(e.as<CastNode>()->value, env));
    default:
      ADD_FAILURE() << "cannot evaluate " << print(e);
      return 0;
  }
}

class RandomExpr {
 public:
  RandomExpr(uint32_t seed, std::vector<Var> vars) : rng_(seed), vars_(std::move(vars)) {}

  Expr int_expr(int depth) {
    int pick = depth <= 0 ? int(rng_() % 3) : int(rng_() % 13);
    switch (pick) {
      case 0:
      case 1:
        return vars_[rng_() % vars_.size()];
      case 2:
        return make_int(DType::I32, constant());
      case 3:
        return int_expr(depth - 1) + int_expr(depth - 1);
      case 4:
        return int_expr(depth - 1) - int_expr(depth - 1);
      case 5:
        return int_expr(depth - 1) * make_int(DType::I32, small());
      case 6:
        return int_expr(depth - 1) * int_expr(depth - 1);
      case 7:
        return int_expr(depth - 1) / make_int(DType::I32, nonzero());
      case 8:
        return int_expr(depth - 1) % make_int(DType::I32, nonzero());
      case 9:
        return min(int_expr(depth - 1), int_expr(depth - 1));
      case 10:
        return max(int_expr(depth - 1), int_expr(depth - 1));
      case 11:
        return select(bool_expr(depth - 1), int_expr(depth - 1), int_expr(depth - 1));
      default:
        return cast(DType::I32, cast(DType::I64, int_expr(depth - 1)) + int64_t{3});
    }
  }
  Expr bool_expr(int depth) {
    switch (rng_() % 5) {
      case 0:
        return int_expr(depth) < int_expr(depth);
      case 1:
        return int_expr(depth) >= int_expr(depth);
      case 2:
        return int_expr(depth) == int_expr(depth);
      case 3:
        return !(int_expr(depth) <= int_expr(depth));
      default:
        return (int_expr(depth) != int_expr(depth)) && bool_expr(depth - 1);
    }
  }
  int64_t constant() {
    static const int64_t kSpecial[] = {0, 1,  -1, 2,  3,          7,
                                       8, 16, 32, -8, 2147483647, -2147483647 - 1};
    return rng_() % 3 == 0 ? kSpecial[rng_() % 12] : int64_t(rng_() % 41) - 20;
  }
  int64_t small() { return int64_t(rng_() % 17) - 8; }
  int64_t nonzero() {
    int64_t v = int64_t(rng_() % 16) - 8;
    return v >= 0 ? v + 1 : v;
  }
  std::mt19937& rng() { return rng_; }

 private:
  std::mt19937 rng_;
  std::vector<Var> vars_;
};

// Finds the value of the first store in a statement.
Expr first_store_value(const Stmt& s) {
  struct Finder : IRVisitor {
    Expr found;
    using IRVisitor::visit;
    void visit(const StoreNode* op) override {
      if (!found.defined()) found = op->value;
    }
  } f;
  f.visit_stmt(s);
  return f.found;
}

TEST(Simplify, RandomIntegerExpressionsKeepTheirValue) {
  Var x("x"), y("y");
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    RandomExpr gen(seed, {x, y});
    Expr e = gen.int_expr(4);
    // Free vars: any i32 value, large ones included (wrapping).
    Expr s = simplify(e);
    // A fixpoint: simplifying again changes nothing.
    EXPECT_TRUE(simplify(s).same_as(s))
        << "seed " << seed << "\n--- input: " << print(e) << "\n--- once: " << print(s)
        << "\n--- twice: " << print(simplify(s));
    for (int trial = 0; trial < 20; ++trial) {
      std::unordered_map<const VarNode*, int64_t> env{
          {x.get(), trial < 10 ? int64_t(int32_t(gen.rng()())) : int64_t(gen.rng()() % 61) - 30},
          {y.get(), trial % 2 ? int64_t(int32_t(gen.rng()())) : int64_t(gen.rng()() % 61) - 30}};
      ASSERT_EQ(eval(e, env), eval(s, env))
          << "seed " << seed << "\n--- input: " << print(e) << "\n--- output: " << print(s)
          << "\n--- x = " << env[x.get()] << ", y = " << env[y.get()];
    }
    // Loop vars: ranges known, so range and lattice rules fire.
    int64_t x0 = int64_t(gen.rng()() % 21) - 10, y0 = int64_t(gen.rng()() % 21) - 10;
    int64_t xn = 2 + gen.rng()() % 40, yn = 2 + gen.rng()() % 40;
    Buffer out = BufferNode::make("out", DType::I32, MemScope::Global, {1});
    Stmt body =
        ForNode::make(x, make_int(DType::I32, x0), make_int(DType::I32, xn), ForKind::Serial, 0,
                      ForNode::make(y, make_int(DType::I32, y0), make_int(DType::I32, yn),
                                    ForKind::Serial, 0, StoreNode::make(out, {0}, e)));
    Expr ls = first_store_value(simplify(body));
    ASSERT_TRUE(ls.defined());
    for (int64_t xv = x0; xv < x0 + xn; xv += 3) {
      for (int64_t yv = y0; yv < y0 + yn; yv += 2) {
        std::unordered_map<const VarNode*, int64_t> env{{x.get(), xv}, {y.get(), yv}};
        ASSERT_EQ(eval(e, env), eval(ls, env))
            << "seed " << seed << " x in [" << x0 << ", " << x0 + xn << "), y in [" << y0 << ", "
            << y0 + yn << ")\n--- input: " << print(e) << "\n--- output: " << print(ls)
            << "\n--- x = " << xv << ", y = " << yv;
      }
    }
  }
}

// The lattice and range rules for `/` and `%` against brute force: every
// (x*c1 + r) / c2 and % c2, with x a loop var over a range with negative
// values and with x free (any i32, wrapping).
TEST(Simplify, DivModRulesMatchBruteForce) {
  Var x("x");
  Buffer out = BufferNode::make("out", DType::I32, MemScope::Global, {1});
  int simplified = 0;
  for (int64_t c1 : {1, 2, 4, 8, 12, 16, 32}) {
    for (int64_t r = -20; r <= 20; r += 3) {
      for (int64_t c2 : {2, 3, 4, 8, 16}) {
        Expr sum = x * make_int(DType::I32, c1) + make_int(DType::I32, r);
        for (Expr e : {DivNode::make(sum, make_int(DType::I32, c2)),
                       ModNode::make(sum, make_int(DType::I32, c2))}) {
          Stmt loop = ForNode::make(x, make_int(DType::I32, -30), make_int(DType::I32, 60),
                                    ForKind::Serial, 0, StoreNode::make(out, {0}, e));
          Expr in_loop = first_store_value(simplify(loop));
          Expr free = simplify(e);
          simplified += !in_loop.same_as(e);
          for (int64_t xv = -30; xv < 30; ++xv) {
            std::unordered_map<const VarNode*, int64_t> env{{x.get(), xv}};
            ASSERT_EQ(eval(e, env), eval(in_loop, env))
                << print(e) << " -> " << print(in_loop) << " at x = " << xv;
          }
          for (int64_t xv : {int64_t{-2147483647 - 1}, int64_t{-268435457}, int64_t{268435456},
                             int64_t{2147483647}, int64_t{-5}, int64_t{7}}) {
            std::unordered_map<const VarNode*, int64_t> env{{x.get(), xv}};
            ASSERT_EQ(eval(e, env), eval(free, env))
                << print(e) << " -> " << print(free) << " at x = " << xv;
          }
        }
      }
    }
  }
  EXPECT_GT(simplified, 300);  // of the 980 cases, most fold to something simpler
}

// ---- identity ------------------------------------------------------------------

TEST(Simplify, ReturnsTheSameNodesWhenNothingChanges) {
  Kernel gemm = tir::testing::gemm_kernel();
  Kernel once = simplify(gemm);
  EXPECT_TRUE(once.body.same_as(gemm.body)) << print(once);
  Kernel gather = simplify(tir::testing::gather_kernel());
  EXPECT_TRUE(simplify(gather).body.same_as(gather.body)) << print(gather);
  Var x("x");
  Expr e = x * 4 + 1;
  EXPECT_TRUE(simplify(e).same_as(e));
  Expr changed = x * 4 + 0;
  EXPECT_FALSE(simplify(changed).same_as(changed));
}

}  // namespace
}  // namespace tilefuse::passes
