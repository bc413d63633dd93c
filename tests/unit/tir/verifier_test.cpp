// The verifier accepts well-formed kernels and names what is wrong with
// malformed ones.
#include <gtest/gtest.h>

#include "test_kernels.h"
#include "tir/parser.h"
#include "tir/printer.h"
#include "tir/verifier.h"

namespace tilefuse::tir {
namespace {

std::string joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const std::string& e : errors) out += e + "\n";
  return out;
}

// Expects exactly one error, containing `message`.
void expect_one_error(const Kernel& k, const std::string& message) {
  std::vector<std::string> errors = verify_errors(k);
  ASSERT_EQ(errors.size(), 1u) << joined(errors) << print(k);
  EXPECT_NE(errors[0].find(message), std::string::npos) << errors[0];
}

// A kernel around `body`: params n (i32), n64 (i64), x (f32 input [16]),
// out (i32 output [16]); grid p.
Kernel wrap(const std::string& body) {
  return parse_kernel(
      "kernel k(\n  n: i32,\n  n64: i64,\n  x: global readonly f32[16],\n"
      "  out: global i32[16],\n) grid(p: 1) {\n" +
      body + "}\n");
}

TEST(TirVerifier, AcceptsWellFormedKernels) {
  EXPECT_EQ(verify_errors(testing::gemm_kernel()), std::vector<std::string>{});
  EXPECT_EQ(verify_errors(testing::gather_kernel()), std::vector<std::string>{});
  EXPECT_NO_THROW(verify(testing::gemm_kernel(), "after build"));
  EXPECT_EQ(verify_errors(wrap(R"(
  alloc f: fragment f32[4, 4]
  alloc s: shared f32[4, 4]
  fill(f, 0.0)
  copy (i: 4, j: 4) s[i, j] = load(x, [i*4 + j], mask=(i < n), other=-1.0)
  gemm(s, s, f, trans_b)
  for i in parallel(0, 4) {
    for j in parallel(0, 4) {
      out[i*4 + j] = i32(f[i, j]), mask=(j < n)
    }
  }
  barrier()
  check(n64 >= 0_i64, code=1, msg="n64 = {}", args=[n64])
)")),
            std::vector<std::string>{});
}

TEST(TirVerifier, RejectsMalformedKernels) {
  // Shapes of the index and the types.
  expect_one_error(wrap("  out[0, 1] = 1\n"),
                   "out[0, 1] = 1: store of out has 2 indices but the buffer has rank 1");
  expect_one_error(wrap("  out[1.0] = 1\n"), "store index `1.0` of out is f32, not i32 or i64");
  expect_one_error(wrap("  if n {\n  }\n"), "an if condition `n` is i32, not bool");
  expect_one_error(wrap("  evaluate(load(x, [0], mask=n))\n"), "a load mask `n` is i32, not bool");
  expect_one_error(wrap("  evaluate(load(x, [0], mask=true, other=0))\n"),
                   "load 'other' has dtype i32 but buffer x holds f32");
  expect_one_error(wrap("  evaluate(n + 1_i64)\n"),
                   "in `n + 1_i64`: operands of + have different dtypes i32 and i64");
  expect_one_error(wrap("  evaluate(true + false)\n"), "arithmetic + on bool");
  expect_one_error(wrap("  evaluate(select(true, n, n64))\n"),
                   "select branches have different dtypes i32 and i64");
  expect_one_error(wrap("  evaluate(exp(n))\n"), "exp needs a float argument, got i32");
  expect_one_error(wrap("  out[0] = 1.0\n"),
                   "value of dtype f32 written to out of dtype i32 (cast it first)");
  expect_one_error(wrap("  for i in serial(0, n64) {\n  }\n"),
                   "loop var, min and extent have dtypes i32, i32, i64");
  expect_one_error(wrap("  check(n > 0, code=1, msg=\"{} {}\", args=[n])\n"),
                   "check message has 2 {} placeholders but 1 args");
  // Memory scopes and access rules.
  expect_one_error(wrap("  x[0] = 1.0\n"), "x[0] = 1.0: write to read-only input x");
  expect_one_error(wrap("  alloc f: fragment f32[4]\n  evaluate(f[0])\n"),
                   "load of fragment f outside a parallel loop");
  expect_one_error(wrap("  alloc g: global f32[4]\n"), "alloc of global buffer g");
  expect_one_error(wrap("  for i in parallel(0, 4) {\n    barrier()\n  }\n"),
                   "barrier inside a parallel loop");
  expect_one_error(wrap("  alloc a: shared f16[16, 32]\n  alloc b: shared f16[16, 16]\n"
                        "  alloc c: fragment f32[16, 16]\n  gemm(a, b, c)\n"),
                   "gemm(a, b, c): gemm K (A vs B) mismatch: 32 vs 16");
  expect_one_error(wrap("  alloc a: shared f16[16, 16]\n  alloc c: fragment f32[16, 16]\n"
                        "  gemm(a, a[0], c)\n"),
                   "gemm operand B (a, rank 2) needs 0 leading indices, got 1");
  expect_one_error(wrap("  alloc a: shared f16[16, 16]\n  alloc c: fragment i32[16, 16]\n"
                        "  gemm(a, a, c)\n"),
                   "gemm accumulator c is i32 for f16 operands");
  {
    std::vector<std::string> errors =
        verify_errors(wrap("  alloc c: fragment f32[16, 16]\n  gemm(c, c, c)\n  gemm(x, c, c)\n"));
    ASSERT_EQ(errors.size(), 2u) << joined(errors);
    EXPECT_EQ(errors[0],
              "gemm(x, c, c): gemm operand A (x) must be shared, fragment or local, not global");
    EXPECT_EQ(errors[1], "gemm(x, c, c): gemm operand A (x) has rank 1; a tile needs 2 dims");
  }
  expect_one_error(wrap("  for i in pipelined(0, 4, stages=0) {\n  }\n"),
                   "a pipelined loop needs num_stages >= 1");
}

TEST(TirVerifier, RejectsScopeErrorsTheTextCannotSpell) {
  // A var that nothing binds.
  {
    KernelBuilder b("k");
    Buffer out = b.output("out", DType::I32, {4});
    Var stray("stray");
    b.store(out, {0}, stray);
    expect_one_error(b.build(), "out[0] = stray: use of undefined var 'stray'");
  }
  // A var bound again inside its own scope.
  {
    Var i("i");
    Buffer out = BufferNode::make("out", DType::I32, MemScope::Global, {4});
    Stmt inner = ForNode::make(i, 0, 4, ForKind::Serial, 0, StoreNode::make(out, {i}, i));
    Kernel k{"k", {{{}, out}}, {}, ForNode::make(i, 0, 4, ForKind::Serial, 0, inner), {}};
    expect_one_error(k, "var 'i' is defined twice");
  }
  // The same var in two sibling loops is fine (unrolling copies bodies).
  {
    Var i("i");
    Buffer out = BufferNode::make("out", DType::I32, MemScope::Global, {4});
    Stmt loop = ForNode::make(i, 0, 4, ForKind::Serial, 0, StoreNode::make(out, {i}, i));
    Kernel k{"k", {{{}, out}}, {}, make_seq({loop, loop}), {}};
    EXPECT_EQ(verify_errors(k), std::vector<std::string>{});
  }
  // Buffers that are not declared where they are used.
  {
    KernelBuilder b("k");
    Buffer out = b.output("out", DType::I32, {4});
    Buffer stray = BufferNode::make("g", DType::I32, MemScope::Global, {4});
    Buffer loose = BufferNode::make("l", DType::I32, MemScope::Local, {4});
    b.store(out, {0}, load(stray, {0}));
    b.store(loose, {0}, 1);
    std::vector<std::string> errors = verify_errors(b.build());
    ASSERT_EQ(errors.size(), 2u) << joined(errors);
    EXPECT_NE(errors[0].find("global buffer 'g' is not a kernel parameter"), std::string::npos);
    EXPECT_NE(errors[1].find("buffer 'l' is used outside its alloc"), std::string::npos);
  }
  // A let whose var has the wrong dtype; a constant that does not fit.
  {
    Var v("v", DType::I64);
    Buffer out = BufferNode::make("out", DType::I8, MemScope::Global, {4});
    Stmt s = LetStmtNode::make(v, 1, StoreNode::make(out, {0}, make_int(DType::I8, 300)));
    std::vector<std::string> errors = verify_errors(Kernel{"k", {{{}, out}}, {}, s, {}});
    ASSERT_EQ(errors.size(), 2u) << joined(errors);
    EXPECT_NE(errors[0].find("let var v has dtype i64 but its value i32"), std::string::npos);
    EXPECT_NE(errors[1].find("in `300_i8`: constant does not fit i8"), std::string::npos);
  }
  // A non-global parameter.
  {
    Buffer s = BufferNode::make("s", DType::F32, MemScope::Shared, {4});
    Kernel k{"k", {{{}, s}}, {}, make_seq({}), {}};
    expect_one_error(k, "parameter s must be a global buffer, not shared");
  }
}

TEST(TirVerifier, HooksCanBeRequiredGone) {
  Kernel k = testing::gemm_kernel();
  EXPECT_EQ(verify_errors(k), std::vector<std::string>{});
  std::vector<std::string> errors = verify_errors(k, VerifyOptions{.allow_hooks = false});
  ASSERT_EQ(errors.size(), 3u) << joined(errors);
  EXPECT_NE(errors[0].find("load_input left after inline_hooks"), std::string::npos);
  EXPECT_NE(errors[2].find("store_output left after inline_hooks"), std::string::npos);
}

TEST(TirVerifier, VerifyThrowsWithContextAndTheKernel) {
  Kernel k = wrap("  out[0] = 1.0\n");
  try {
    verify(k, "after licm");
    FAIL() << "no throw";
  } catch (const InternalError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("malformed Tile IR after licm:"), std::string::npos) << what;
    EXPECT_NE(what.find("  out[0] = 1.0: value of dtype f32"), std::string::npos) << what;
    EXPECT_NE(what.find("kernel k("), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace tilefuse::tir
