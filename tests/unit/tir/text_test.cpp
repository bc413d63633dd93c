// The text form: print(parse(text)) == text, parse(print(k)) equals k, name
// uniquing, literal spelling, and parse errors with line:col.
#include <gtest/gtest.h>

#include <cmath>

#include "test_kernels.h"
#include "tir/parser.h"
#include "tir/printer.h"
#include "tir/structural.h"
#include "tir/verifier.h"

namespace tilefuse::tir {
namespace {

// Checks print(parse(text)) == text and that a second round trip is stable.
void expect_round_trip(const std::string& text) {
  Kernel k = parse_kernel(text);
  std::string printed = print(k);
  EXPECT_EQ(printed, text);
  Kernel again = parse_kernel(printed);
  EXPECT_TRUE(structural_equal(k, again));
  EXPECT_EQ(structural_hash(k), structural_hash(again));
}

TEST(TirText, BuiltKernelsRoundTrip) {
  for (const Kernel& k : {testing::gemm_kernel(), testing::gather_kernel()}) {
    std::string text = print(k);
    Kernel parsed = parse_kernel(text);
    EXPECT_EQ(print(parsed), text);
    EXPECT_TRUE(structural_equal(k, parsed)) << text;
    EXPECT_EQ(structural_hash(k), structural_hash(parsed));
    EXPECT_EQ(verify_errors(parsed), std::vector<std::string>{});
  }
}

TEST(TirText, EveryStatementKindRoundTrips) {
  expect_round_trip(R"(kernel everything(
  n: i64,
  flag: bool,
  src: global readonly f16[n, 8] strides [8, 1] align 16,
  dst: global f64[n],
) grid(p: 4, q: 2) attrs(mode = "x \"y\"", neg = -3, ratio = 0.1) plan(threads=384, consumer_threads=256, shared_bytes=99504, shared_align=1024, async_barriers=1, tensor_maps=[(param=2, elem=2, dims=[8, 100], strides=[16], box=[8, 8], swizzle=128)], notes=["a \"note\"", "b"]) {
  alloc buf: shared f16[2, 8, 8] plan(swizzled, stages=2, offset=1024, bytes=256)
  alloc acc: fragment f32[8, 8] plan(mma_sync, operand=f16, block=[8, 8, 16], warps=[1, 1])
  alloc tmp: local i8[4] strides [1] align 4
  fill(acc, 0.0)
  barrier()
  barrier(block_async)
  barrier(consumers)
  for s in serial(0, 2) {
    copy (r: 8, c: 8) buf[s, r, c] = load(src, [i64(r), c], mask=(r < 4), other=1.5_f16) plan(cp_async, width=16, reason="16-byte \"aligned\"")
    copy (r_1: 8, c_1: 8) buf[s, r_1, c_1] = f16(f32(src[i64(r_1), c_1])*2.0) plan(register, width=16, vector_load={src[i64(r_1), c_1]}, slots=4)
    copy (r_2: 8, c_2: 8) buf[s, r_2, c_2] = src[i64(s), c_2 + r_2*8] plan(tma, width=16, map=0, boxes=[({s*8}, {i64(r_2)}, smem=0), ({s*8 + 64}, {0}, smem=4096)], bytes=256, reason="affine")
    copy (r_3: 8, c_3: 8) buf[s, r_3, c_3] = load(src, [i64(c_3), r_3], mask=(c_3 < 4)) plan(tma, width=16, map=0, boxes=[({i64(c_3)}, {0}, smem=0)], bytes=128, rows=8, row_pitch=8, row_mask={c_3 < 4})
  }
  gemm(buf[0], buf[1], acc, trans_a)
  gemm(buf[0], buf[1], acc, trans_a, trans_b)
  for i in unrolled(0_i64, n) {
    let a = i*2_i64 - (i - 1_i64)
    let b = !(a < n && a >= 0_i64) || flag
    if b {
      evaluate(min(a, max(a, -3_i64)))
    } else {
      tmp[0] = i8(a%3_i64)
    }
    check(i < n, code=-2, msg="bad {} in {}", args=[i, a])
    dst[i] = f64(load_input<f32>("x", [i], mask=b)), mask=(a != 7_i64)
    store_output("y", [i/2_i64, a], select(b, 1e+20_f64, -0.0_f64))
  }
  for j in parallel(0, 8) plan(staged, pitch=136, stmatrix=1, contiguous_chunks=1, chunk_mask_varies=1, pair_cast=1, offset=256, why="x") {
    for k in pipelined(0, 8, stages=2) plan(warp_specialized, stages=2, issue_ahead=2, wgmma_in_flight=1, producer_threads=128, consumer_threads=256, mbarriers=99456) {
      acc[j, k] = fma(acc[j, k], 2.0, exp(-inf)) + hypot(sigmoid(0.1), nan)*f32(3.0_bf16)
      acc[j, k] = f32(255_u8)/(f32(-128_i8) - 1.0) - f32((j < k) == (k < j))
    }
  }
  evaluate(f64(inf_f16) + -inf_f64 + f64(nan_bf16))
  evaluate(true && false)
}
)");
}

// Split-K's election of a tile's last block (LastArrivalNode).
TEST(TirText, IfLastArrivalRoundTrips) {
  expect_round_trip(R"(kernel split(
  ws: global f32[3, 4, 8],
  ctr: global i32[4],
  out: global f32[4, 8],
) grid(pid_k: 3, pid: 4) {
  for j in parallel(0, 8) {
    ws[pid_k, pid, j] = 1.0
  }
  if_last_arrival(ctr[pid], 3) {
    for j_1 in parallel(0, 8) {
      out[pid, j_1] = ws[0, pid, j_1] + ws[1, pid, j_1] + ws[2, pid, j_1]
    }
  }
}
)");
}

// The block timeline's slot (LaunchPlan::timeline_slot): printed and parsed
// back, and refused where its 32 bytes are not 8-byte aligned or not inside
// the kernel's shared bytes.
TEST(TirText, TimelineSlotRoundTripsAndIsChecked) {
  const std::string head = "kernel k() grid(p: 1) plan(threads=128, shared_bytes=";
  expect_round_trip(head + "1056, shared_align=128, timeline_slot=1024) {\n}\n");
  EXPECT_EQ(parse_kernel(head + "1056, shared_align=128, timeline_slot=1024) {\n}\n")
                .launch.timeline_slot,
            1024);
  EXPECT_FALSE(parse_kernel(head + "1056) {\n}\n").launch.block_timeline());
  for (const char* bad :
       {"1056, timeline_slot=1020", "1048, timeline_slot=1024", "1056, timeline_slot=-8"}) {
    SCOPED_TRACE(bad);
    try {
      parse_kernel(head + bad + ") {\n}\n");
      ADD_FAILURE() << "no error";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("`timeline_slot` is -1 or the 8-byte-aligned offset"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(TirText, EmptyKernelAndEmptyBlocks) {
  expect_round_trip("kernel empty() grid() {\n}\n");
  expect_round_trip(R"(kernel blocks() grid(p: 1) {
  for i in serial(0, 4) {
  }
  if p == 0 {
  } else {
  }
}
)");
}

TEST(TirText, CommentsAndLayoutAreIgnored) {
  Kernel k = parse_kernel(
      "# a comment\nkernel k(n: i32) grid(p: n) {  # here too\n"
      "  for i in serial(0,\n n) { evaluate(i*p) } }");
  EXPECT_EQ(print(k), R"(kernel k(
  n: i32,
) grid(p: n) {
  for i in serial(0, n) {
    evaluate(i*p)
  }
}
)");
}

TEST(TirText, ParenthesesFollowTheTree) {
  Var a("a"), b("b"), c("c");
  EXPECT_EQ(print(SubNode::make(a, SubNode::make(b, c))), "a - (b - c)");
  EXPECT_EQ(print(SubNode::make(SubNode::make(a, b), c)), "a - b - c");
  EXPECT_EQ(print(MulNode::make(AddNode::make(a, b), c)), "(a + b)*c");
  EXPECT_EQ(print(DivNode::make(a, MulNode::make(b, c))), "a/(b*c)");
  EXPECT_EQ(print(AddNode::make(a, MulNode::make(b, c))), "a + b*c");
  EXPECT_EQ(print(EQNode::make(LTNode::make(a, b), LTNode::make(b, c))), "(a < b) == (b < c)");
  EXPECT_EQ(print(AndNode::make(OrNode::make(LTNode::make(a, b), LTNode::make(b, c)),
                                LTNode::make(a, c))),
            "(a < b || b < c) && a < c");
  EXPECT_EQ(print(NotNode::make(LTNode::make(a, b))), "!(a < b)");
  EXPECT_EQ(print(SubNode::make(a, make_int(DType::I32, -1))), "a - -1");
  // And each reads back as the same tree.
  for (const Expr& e :
       {SubNode::make(a, SubNode::make(b, c)), MulNode::make(AddNode::make(a, b), c),
        EQNode::make(LTNode::make(a, b), LTNode::make(b, c)),
        SubNode::make(a, make_int(DType::I32, -1))}) {
    EXPECT_TRUE(structural_equal(parse_expr(print(e), {a, b, c}), e)) << print(e);
  }
}

TEST(TirText, LiteralSpelling) {
  EXPECT_EQ(print(make_const(DType::F32, 0.1)), "0.1");
  EXPECT_EQ(print(make_const(DType::F32, 1)), "1.0");
  EXPECT_EQ(print(make_const(DType::F64, 0.1)), "0.1_f64");
  EXPECT_EQ(print(make_const(DType::F16, 0.1)), "0.099975586_f16");
  EXPECT_EQ(print(make_const(DType::F32, 1e20)), "1e+20");
  EXPECT_EQ(print(make_const(DType::F32, -0.0)), "-0.0");
  EXPECT_EQ(print(make_const(DType::F32, INFINITY)), "inf");
  EXPECT_EQ(print(make_const(DType::BF16, -INFINITY)), "-inf_bf16");
  EXPECT_EQ(print(make_const(DType::F32, NAN)), "nan");
  EXPECT_EQ(print(make_int(DType::I64, -5)), "-5_i64");
  EXPECT_EQ(print(make_bool(true)), "true");
  // Every value comes back bit for bit.
  for (DType dt : {DType::F16, DType::BF16, DType::F32, DType::F64, DType::F8E4M3}) {
    for (double v : {0.1, 1.0 / 3, -2.5e-3, 448.0, 6.1e-5}) {
      Expr c = make_const(dt, v);
      Expr back = parse_expr(print(c));
      ASSERT_NE(back.as<FloatImmNode>(), nullptr);
      EXPECT_EQ(back.dtype(), dt);
      EXPECT_EQ(back.as<FloatImmNode>()->value, c.as<FloatImmNode>()->value) << print(c);
    }
  }
  Expr big = parse_expr("-9223372036854775808_i64");
  EXPECT_EQ(big.as<IntImmNode>()->value, INT64_MIN);
}

TEST(TirText, NamesAreUnique) {
  KernelBuilder b("names");
  Buffer buf = b.output("i", DType::I32, {4});
  Var pid = b.program_id("for", 1);
  b.serial("i", 2, [&](Var i) { b.store(buf, {i}, pid); });
  b.serial("i", 2, [&](Var i) { b.serial("i", 2, [&](Var i2) { b.store(buf, {i2}, i); }); });
  b.let("a b", 1);
  b.let("2x", 2);
  b.let("inf_f16", 3);
  Kernel k = b.build();
  std::string text = print(k);
  EXPECT_EQ(text, R"(kernel names(
  i: global i32[4],
) grid(for_: 1) {
  for i_1 in serial(0, 2) {
    i[i_1] = for_
  }
  for i_2 in serial(0, 2) {
    for i_3 in serial(0, 2) {
      i[i_3] = i_2
    }
  }
  let a_b = 1
  let _2x = 2
  let inf_f16_ = 3
}
)");
  expect_round_trip(text);
}

// Parses `text`, expecting a UserError at line:col whose message contains
// `message`.
void expect_parse_error(const std::string& text, int line, int col, const std::string& message) {
  try {
    parse_kernel(text);
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const UserError& e) {
    EXPECT_EQ(e.loc().line, line) << e.what();
    EXPECT_EQ(e.loc().col, col) << e.what();
    std::string expected_prefix = std::to_string(line) + ":" + std::to_string(col) + ": ";
    EXPECT_EQ(std::string(e.what()).rfind(expected_prefix, 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(TirText, ParseErrorsHaveLineAndColumn) {
  const std::string head = "kernel k(n: i32) grid(p: 1) {\n";
  expect_parse_error(head + "  x[0] = 1\n}\n", 2, 3, "undefined buffer 'x'");
  expect_parse_error(head + "  evaluate(n @ 2)\n}\n", 2, 14, "unexpected character '@'");
  expect_parse_error(head + "  evaluate(y)\n}\n", 2, 12, "undefined name 'y'");
  expect_parse_error(head + "  let a = 1\n  let a = 2\n}\n", 3, 7, "'a' is already defined");
  expect_parse_error(head + "  check(true, code=1, msg=\"oops)\n}\n", 2, 27, "unterminated string");
  expect_parse_error(head + "  evaluate(n < 1 < 2)\n}\n", 2, 18, "comparisons do not chain");
  expect_parse_error(head + "  evaluate(1_i33)\n}\n", 2, 12, "unknown dtype suffix '_i33'");
  expect_parse_error(head + "  evaluate(300_u8)\n}\n", 2, 12, "does not fit u8");
  expect_parse_error(head + "  evaluate(-n)\n}\n", 2, 12, "unary '-' applies only to literals");
  expect_parse_error(head + "  evaluate(frob(n))\n}\n", 2, 12, "unknown function 'frob'");
  expect_parse_error(head + "  evaluate(exp(n, n))\n}\n", 2, 15, "exp takes 1 argument, got 2");
  expect_parse_error(head + "  for i in sideways(0, 4) {\n  }\n}\n", 2, 12, "unknown loop kind");
  expect_parse_error(head + "  for i in pipelined(0, 4) {\n  }\n}\n", 2, 26,
                     "expected ', stages=N'");
  expect_parse_error(head + "  evaluate(n)\n", 3, 1, "expected '}', found the end of the text");
  expect_parse_error(head + "  alloc t: texture f32[4]\n}\n", 2, 12,
                     "unknown memory scope 'texture'");
  expect_parse_error("kernel k(a: f17) grid() {\n}\n", 1, 13, "expected a dtype");
  expect_parse_error(head + "  n[0] = 1\n}\n", 2, 3, "'n' is a var, not a buffer");
  expect_parse_error(head + "}\nextra", 3, 1, "expected the end of the text");
  expect_parse_error(head + "  evaluate(1e99)\n}\n", 2, 12, "1e99 is out of range for f32");
  expect_parse_error(head + "  evaluate(9223372036854775808_i64)\n}\n", 2, 12, "does not fit i64");
  expect_parse_error(head + "  evaluate(-1_u8)\n}\n", 2, 13, "-1 does not fit u8");
  expect_parse_error(
      head + "  evaluate(" + std::string(5000, '(') + "n" + std::string(5000, ')') + ")\n}\n", 2,
      211, "nested too deeply");
  expect_parse_error(head + "  evaluate(" + std::string(5000, '!') + "true)\n}\n", 2, 211,
                     "nested too deeply");
}

TEST(TirText, FormatFloat) {
  EXPECT_EQ(format_float(2.0, DType::F32), "2.0");
  EXPECT_EQ(format_float(0.1, DType::F64), "0.1");
  EXPECT_EQ(format_float(-INFINITY, DType::F16), "-inf");
  EXPECT_TRUE(is_reserved_word("for"));
  EXPECT_TRUE(is_reserved_word("f16"));
  EXPECT_TRUE(is_reserved_word("exp"));
  EXPECT_TRUE(is_reserved_word("nan_f64"));
  EXPECT_FALSE(is_reserved_word("nan_x"));
  EXPECT_FALSE(is_reserved_word("half"));
}

}  // namespace
}  // namespace tilefuse::tir
