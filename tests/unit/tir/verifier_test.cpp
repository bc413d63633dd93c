// The verifier accepts well-formed kernels and names what is wrong with
// malformed ones.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "test_kernels.h"
#include "tir/functor.h"
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
  // if_last_arrival: an i32 global counter, once per program instance.
  EXPECT_EQ(verify_errors(wrap("  if_last_arrival(out[p], 2) {\n    out[0] = 1\n  }\n")),
            std::vector<std::string>{});
  expect_one_error(wrap("  if_last_arrival(x[p], 2) {\n  }\n"),
                   "if_last_arrival needs an i32 global counter, got x");
  // (a count of 0 is legal: no arrival, no body; stream-K's empty pieces)
  EXPECT_EQ(verify_errors(wrap("  if_last_arrival(out[p], 0) {\n  }\n")),
            std::vector<std::string>{});
  expect_one_error(wrap("  if_last_arrival(out[p], 1.5) {\n  }\n"),
                   "if_last_arrival needs an integer count, got f32");
  expect_one_error(
      wrap("  for i in parallel(0, 4) {\n    if_last_arrival(out[i], 2) {\n    }\n  }\n"),
      "if_last_arrival inside a parallel loop");
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

// ---- the kernel plan ----------------------------------------------------------

// The 128x128x64 f16 GEMM as the CUDA backend passes leave it on sm_90a
// (`tilefuse emit bench/programs/gemm_f16.tfs --stage=tir-opt --target
// sm_90a`, trimmed): warp-specialized, both tiles by TMA, a staged epilogue.
const char* const kPlanned = R"(kernel gemm(
  x: global readonly f16[2048, 2048] strides [2048, 1] align 16,
  y: global readonly f16[2048, 2048] strides [2048, 1] align 16,
  out: global f16[2048, 2048] strides [2048, 1] align 16,
) grid(pid_m: 16, pid_n: 16) plan(threads=384, consumer_threads=256, shared_bytes=98352, shared_align=1024, async_barriers=1, tensor_maps=[(param=0, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 128], swizzle=128), (param=1, elem=2, dims=[2048, 2048], strides=[4096], box=[64, 64], swizzle=128)]) {
  alloc A_s: shared f16[128, 64] plan(swizzled, stages=3, offset=0, bytes=49152)
  alloc B_s: shared f16[64, 128] plan(mn_swizzled, stages=3, offset=49152, bytes=49152)
  alloc C_f: fragment f32[128, 128] plan(wgmma, operand=f16, block=[128, 128, 64], warps=[2, 1])
  fill(C_f, 0.0)
  for k in pipelined(0, 32, stages=3) plan(warp_specialized, stages=3, issue_ahead=3, wgmma_in_flight=1, producer_threads=128, consumer_threads=256, registers=[64, 216], mbarriers=98304) {
    copy (i: 128, j: 64) A_s[i, j] = x[pid_m*128 + i, k*64 + j] plan(tma, width=16, map=0, boxes=[({k*64}, {pid_m*128}, smem=0)], bytes=16384)
    copy (i_1: 64, j_1: 128) B_s[i_1, j_1] = y[k*64 + i_1, pid_n*128 + j_1] plan(tma, width=16, map=1, boxes=[({pid_n*128}, {k*64}, smem=0), ({pid_n*128 + 64}, {k*64}, smem=4096)], bytes=16384)
    gemm(A_s, B_s, C_f)
  }
  for i_2 in parallel(0, 128) plan(staged, pitch=136, stmatrix=1, contiguous_chunks=1, pair_cast=1) {
    for j_2 in parallel(0, 128) {
      out[pid_m*128 + i_2, pid_n*128 + j_2] = f16(C_f[i_2, j_2])
    }
  }
}
)";

// kPlanned with each `from` replaced by its `to`.
Kernel planned(std::initializer_list<std::pair<const char*, const char*>> edits) {
  std::string text = kPlanned;
  for (const auto& [from, to] : edits) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, std::string(from).size(), to);
  }
  return parse_kernel(text);
}

// A kernel with register-staged and cp.async copies into two shared tiles:
// x (f32[4096]) and h (f16[4096]) in, out out; grid p.
Kernel small(const std::string& launch, const std::string& body) {
  return parse_kernel(
      "kernel k(\n  x: global readonly f32[4096] strides [1] align 16,\n"
      "  h: global readonly f16[4096] strides [1] align 16,\n"
      "  out: global f16[4096] strides [1] align 16,\n) grid(p: 32) plan(" +
      launch +
      ") {\n  alloc s: shared f16[128] plan(row_major, stages=1, offset=0, bytes=256)\n"
      "  alloc t: shared f16[128] plan(row_major, stages=1, offset=256, bytes=256)\n" +
      body + "}\n");
}
const char* const kSmallLaunch = "threads=128, shared_bytes=512, shared_align=128";

TEST(TirVerifierPlan, AcceptsThePlanOfTheBackendPasses) {
  EXPECT_EQ(verify_errors(parse_kernel(kPlanned)), std::vector<std::string>{});
  // A consumers barrier after the warp-specialized loop.
  EXPECT_EQ(verify_errors(planned({{"  for i_2", "  barrier(consumers)\n  for i_2"}})),
            std::vector<std::string>{});
  EXPECT_EQ(
      verify_errors(small(kSmallLaunch,
                          "  copy (i: 128) s[i] = f16(x[p*128 + i]) plan(register, width=16, "
                          "vector_load={x[p*128 + i]})\n"
                          "  copy (i_1: 128) t[i_1] = h[p*128 + i_1] plan(cp_async, width=16)\n")),
      std::vector<std::string>{});
}

// vector_load is a Load node of the copy's value itself: a structurally
// equal load built elsewhere is not (the parser always finds the node, so
// the plan is swapped here).
TEST(TirVerifierPlan, VectorLoadIsALoadNodeOfTheCopysValue) {
  Kernel k = small(kSmallLaunch,
                   "  copy (i: 128) s[i] = f16(x[p*128 + i]) plan(register, width=16, "
                   "vector_load={x[p*128 + i]})\n");
  struct Swap : IRMutator {
    using IRMutator::visit;
    Stmt visit(const CopyNode* op) override {
      CopyPlan plan = *op->plan;
      const LoadNode* l = plan.vector_load.as<LoadNode>();
      plan.vector_load = LoadNode::make(l->buffer, l->indices);  // equal, not the same node
      return CopyNode::make(op->vars, op->extents, op->dst, op->dst_indices, op->value, plan);
    }
  } swap;
  expect_one_error(swap.mutate_kernel(k),
                   "copy plan: vector_load `x[p*128 + i]` is not a load node of the copy's value");
}

TEST(TirVerifierPlan, VectorLoadWidthIsTwoOrMoreElements) {
  for (const char* width : {"4", "6"})
    expect_one_error(
        small(kSmallLaunch, "  copy (i: 128) s[i] = f16(x[p*128 + i]) plan(register, width=" +
                                std::string(width) + ", vector_load={x[p*128 + i]})\n"),
        "copy plan: a vector load of width " + std::string(width) +
            " reads 4-byte elements (its width must be two or more of them)");
}

TEST(TirVerifierPlan, CpAsyncWidthIs4Or8Or16) {
  expect_one_error(
      small(kSmallLaunch, "  copy (i: 128) t[i] = h[p*128 + i] plan(cp_async, width=2)\n"),
      "copy plan: cp_async of width 2 (cp.async copies 4, 8 or 16 bytes)");
}

// The by-repeats cache level (l1_by_repeats) compares hoisted 16-byte
// sources and picks between .ca and .cg: only on a hoisted 16-byte cp.async
// through L1.
TEST(TirVerifierPlan, CacheByRepeatsOnlyOnAHoistedSixteenByteCopyThroughL1) {
  const std::string head = "  copy (i: 128) t[i] = h[p*128 + i] plan(cp_async, ";
  const std::string hoist = "hoist=(indices=[{p*128 + i}], step=0, l1_by_repeats=1))\n";
  const std::string msg =
      "copy plan: l1_by_repeats on a copy that is not a hoisted 16-byte cp.async with cache_all";
  expect_one_error(small(kSmallLaunch, head + "width=16, " + hoist), msg);
  expect_one_error(small(kSmallLaunch, head + "width=8, cache_all=1, " + hoist), msg);
  EXPECT_EQ(verify_errors(small(kSmallLaunch, head + "width=16, cache_all=1, " + hoist)),
            std::vector<std::string>{});
}

// A split-K workspace moved 16 bytes at a time (workspace_vector) is a
// fragment-order workspace whose elements fill the vector exactly.
TEST(TirVerifierPlan, WorkspaceVectorIsSixteenBytesOfAFragmentOrderWorkspace) {
  expect_one_error(planned({{"async_barriers=1,", "async_barriers=1, workspace_vector=4,"}}),
                   "kernel plan: workspace_vector 4 without a fragment-order workspace");
  // (param 2, out, is f16: 4 of its elements are 8 bytes)
  expect_one_error(planned({{"async_barriers=1,",
                             "async_barriers=1, workspace_fragment_order=2, workspace_vector=4,"}}),
                   "kernel plan: workspace_vector 4 of 2-byte elements (a vector is 16 bytes of "
                   "4- or 8-byte elements)");
  expect_one_error(planned({{"async_barriers=1,",
                             "async_barriers=1, workspace_fragment_order=2, workspace_vector=8,"}}),
                   "kernel plan: workspace_vector 8 of 2-byte elements (a vector is 16 bytes of "
                   "4- or 8-byte elements)");
  // (the accepted form: splitk_workspace_test.cpp's f32 workspace at 4)
}

// A multicast cluster pairs tiles between two blocks: not in a ping-pong
// kernel (each team takes every other tile of its block); a split-K
// cluster meets a tile's splits at once: not in a persistent kernel.
TEST(TirVerifierPlan, ClustersOnlyWhereTheirBlocksMeet) {
  auto has = [](const std::vector<std::string>& errors, const std::string& message) {
    for (const std::string& e : errors)
      if (e.find(message) != std::string::npos) return true;
    return false;
  };
  const std::vector<std::string> pingpong = verify_errors(planned(
      {{"async_barriers=1,", "async_barriers=1, persistent=1, consumer_teams=2, cluster=2,"}}));
  EXPECT_TRUE(has(pingpong, "kernel plan: a multicast cluster in a stream-K or ping-pong kernel"))
      << joined(pingpong);
  const std::vector<std::string> split = verify_errors(planned(
      {{"async_barriers=1,", "async_barriers=1, persistent=1, cluster=2, split_k_cluster=1,"}}));
  EXPECT_TRUE(has(split, "kernel plan: split_k_cluster in a persistent kernel")) << joined(split);
  // A persistent kernel in a 2-block cluster is a plan the verifier takes.
  const std::vector<std::string> ok =
      verify_errors(planned({{"async_barriers=1,", "async_barriers=1, persistent=1, cluster=2,"}}));
  EXPECT_FALSE(has(ok, "cluster")) << joined(ok);
}

// The ring count's fold (LaunchPlan::ring_fold_at): only a persistent
// kernel counts its ring over tiles; 0 is never, a negative one is nothing.
TEST(TirVerifierPlan, RingFoldOnlyInAPersistentKernel) {
  expect_one_error(planned({{"async_barriers=1,", "async_barriers=1, ring_fold_at=1,"}}),
                   "kernel plan: ring_fold_at 1 in a kernel that is not persistent");
  expect_one_error(
      planned({{"async_barriers=1,", "async_barriers=1, persistent=1, ring_fold_at=-1,"}}),
      "kernel plan: ring_fold_at -1 (0: never)");
  EXPECT_EQ(verify_errors(planned(
                {{"async_barriers=1,", "async_barriers=1, persistent=1, ring_fold_at=1,"}})),
            std::vector<std::string>{});
  EXPECT_EQ(verify_errors(planned({{"async_barriers=1,",
                                    "async_barriers=1, persistent=1, ring_fold_at=1073741824,"}})),
            std::vector<std::string>{});
}

// The block timeline's slot (LaunchPlan::timeline_slot) lies clear of the
// shared buffers and the mbarriers: after the mbarriers it is taken, over a
// ring or over the mbarriers it is an error.
TEST(TirVerifierPlan, TheTimelineSlotOverlapsNothing) {
  auto with_slot = [](const char* shared_bytes, const char* slot) {
    return verify_errors(
        planned({{"shared_bytes=98352", shared_bytes}, {"async_barriers=1,", slot}}));
  };
  EXPECT_EQ(with_slot("shared_bytes=98384", "async_barriers=1, timeline_slot=98352,"),
            std::vector<std::string>{});
  const std::vector<std::string> ring =
      with_slot("shared_bytes=98352", "async_barriers=1, timeline_slot=49152,");
  EXPECT_NE(joined(ring).find("overlaps the block timeline's slot at [49152, 49184)"),
            std::string::npos)
      << joined(ring);
  const std::vector<std::string> mbarriers =
      with_slot("shared_bytes=98352", "async_barriers=1, timeline_slot=98312,");
  EXPECT_NE(joined(mbarriers).find("its mbarriers at [98304, 98352) overlap the block timeline's "
                                   "slot at [98312, 98344)"),
            std::string::npos)
      << joined(mbarriers);
}

TEST(TirVerifierPlan, TmaOnlyInAWarpSpecializedLoopWithAKernelTensorMap) {
  expect_one_error(
      planned({{"  fill(C_f, 0.0)\n",
                "  fill(C_f, 0.0)\n  alloc T_s: shared f16[64, 64]\n  copy (r: 64, c: 64) T_s[r, "
                "c] = y[r, c] plan(tma, width=16, map=1, boxes=[({0}, {0}, smem=0)], "
                "bytes=8192)\n"}}),
      "copy plan: a tma copy outside a warp-specialized pipelined loop (only its producer "
      "warpgroup issues TMA)");
  expect_one_error(planned({{"plan(tma, width=16, map=1", "plan(tma, width=16, map=2"}}),
                   "copy plan: tma map 2 is not one of the kernel's 2 tensor maps");
}

// A tile a pipelined loop's copies fill holds one stage per stage of the
// loop, and its bytes are its stages of its tile.
TEST(TirVerifierPlan, RingDepthIsTheLoopsStages) {
  expect_one_error(
      planned({{"stages=3, offset=0, bytes=49152", "stages=2, offset=0, bytes=32768"}}),
      "copy (i: 128, j: 64) A_s[i, j] = x[pid_m*128 + i, k*64 + j] plan(tma, "
      "width=16, map=0, boxes=[({k*64}, {pid_m*128}, smem=0)], bytes=16384): shared "
      "buffer A_s has a ring depth of 2 but the pipelined loop k that fills it has 3 "
      "stages");
  expect_one_error(planned({{"offset=0, bytes=49152", "offset=0, bytes=49150"}}),
                   "shared buffer A_s has 49150 bytes for 3 stages of 16384 bytes");
}

// wgmma operands (and TMA tiles with a swizzled tensor map) start every
// stage on 1024 bytes.
TEST(TirVerifierPlan, WgmmaTilesAre1024ByteAligned) {
  expect_one_error(planned({{"offset=49152, bytes=49152", "offset=49280, bytes=49152"},
                            {"mbarriers=98304", "mbarriers=98432"},
                            {"shared_bytes=98352", "shared_bytes=98480"}}),
                   "shared buffer B_s is a wgmma operand but its stages are not 1024-byte aligned "
                   "(offset 49280, stages of 16384 bytes)");
}

// Buffers live at once and the mbarriers do not overlap, and fit the
// kernel's shared bytes.
TEST(TirVerifierPlan, SharedBuffersFitAndDoNotOverlap) {
  expect_one_error(planned({{"offset=49152, bytes=49152", "offset=48128, bytes=49152"}}),
                   "shared buffer B_s at [48128, 97280) overlaps A_s at [0, 49152)");
  expect_one_error(planned({{"mbarriers=98304", "mbarriers=98256"}}),
                   "warp-specialized loop k: its mbarriers at [98256, 98304) overlap shared "
                   "buffer B_s at [49152, 98304)");
  expect_one_error(planned({{"shared_bytes=98352", "shared_bytes=98336"}}),
                   "warp-specialized loop k: its mbarriers at [98304, 98352) exceed the kernel's "
                   "98336 shared bytes");
  expect_one_error(small("threads=128, shared_bytes=500, shared_align=128", ""),
                   "shared buffer t at [256, 512) exceeds the kernel's 500 shared bytes");
  // Buffers whose allocations are not live at once may share bytes.
  EXPECT_EQ(verify_errors(parse_kernel(R"(kernel k(
  h: global readonly f16[4096] strides [1] align 16,
) grid(p: 32) plan(threads=128, shared_bytes=256, shared_align=128) {
  for r in serial(0, 1) {
    alloc s: shared f16[128] plan(row_major, stages=1, offset=0, bytes=256)
    copy (i: 128) s[i] = h[p*128 + i] plan(cp_async, width=16)
  }
  for r_1 in serial(0, 1) {
    alloc t: shared f16[128] plan(row_major, stages=1, offset=0, bytes=256)
    copy (i_1: 128) t[i_1] = h[p*128 + i_1] plan(cp_async, width=16)
  }
}
)")),
            std::vector<std::string>{});
}

// A gemm_pack copy is a 2-D copy of a plain load of the tile's dtype: the
// gemm reads the source rows, so nothing else can be staged that way.
TEST(TirVerifierPlan, GemmPackCopiesArePlainTwoDLoads) {
  const std::string head =
      "kernel k(\n  h: global readonly f16[64, 64] strides [64, 1] align 16,\n) grid(p: 1) {\n"
      "  alloc s: shared f16[16, 16]\n";
  EXPECT_EQ(verify_errors(parse_kernel(
                head + "  copy (i: 16, j: 16) s[i, j] = h[i, j] plan(gemm_pack, width=2)\n}\n")),
            std::vector<std::string>{});
  const std::string msg =
      "copy plan: the gemm_pack copy into s is not a 2-D copy of a plain load of its dtype (the "
      "gemm packs from the source rows)";
  expect_one_error(parse_kernel(head +
                                "  copy (i: 16, j: 16) s[i, j] = h[i, j]*2.0_f16 "
                                "plan(gemm_pack, width=2)\n}\n"),
                   msg);
  expect_one_error(parse_kernel(head +
                                "  copy (i: 16, j: 16) s[i, j] = load(h, [i, j], mask=(j < 8), "
                                "other=1.0_f16) plan(gemm_pack, width=2)\n}\n"),
                   msg);
}

TEST(TirVerifierPlan, WarpSpecializedLoopThreadsAndPlace) {
  expect_one_error(planned({{"threads=384", "threads=256"}}),
                   "warp-specialized loop k: the launch has 256 threads, not its producer's 128 + "
                   "consumers' 256");
  // Inside a tile loop: the split runs the loop once per block.
  expect_one_error(
      planned({{"  for k in", "  for t in serial(0, 2) {\n  for k in"},
               {"    gemm(A_s, B_s, C_f)\n  }\n", "    gemm(A_s, B_s, C_f)\n  }\n  }\n"}}),
      "warp-specialized loop k is not at the kernel's top level (the "
      "producer/consumer split runs it once per block: only sequences, lets and "
      "allocations may enclose it)");
  expect_one_error(planned({{"  fill(C_f, 0.0)\n", "  fill(C_f, 0.0)\n  barrier(consumers)\n"}}),
                   "barrier(consumers): a consumers barrier before any warp-specialized loop "
                   "(only after one do the consumer warpgroups run alone)");
}

// One producer thread (single_issuer) only issues affine TMA copies, and
// only a warp-specialized loop has a producer.
TEST(TirVerifierPlan, SingleIssuerOnlyOverAffineTmaCopies) {
  const char* const ws = "registers=[64, 216], mbarriers";
  EXPECT_EQ(verify_errors(planned({{ws, "registers=[64, 216], single_issuer=1, mbarriers"}})),
            std::vector<std::string>{});
  expect_one_error(
      planned({{ws, "registers=[64, 216], single_issuer=1, mbarriers"},
                {"plan(tma, width=16, map=0, boxes=[({k*64}, {pid_m*128}, smem=0)], bytes=16384)",
                 "plan(cp_async, width=16)"}}),
      "warp-specialized loop k: single_issuer, but its copy into A_s is not an affine TMA copy");
  expect_one_error(
      small(kSmallLaunch,
            "  for k in pipelined(0, 4, stages=1) plan(ring, stages=1, issue_ahead=0, "
            "single_issuer=1) {\n    copy (i: 128) t[i] = h[k*128 + i] plan(cp_async, "
            "width=16)\n    out[k] = t[0]\n  }\n"),
      "a pipelined loop with a single issuer that is not a warp-specialized loop");
  // A persistent kernel whose producer has a prologue (here an index check
  // before the loop): all its threads run it, so not one issuer.
  expect_one_error(
      planned({{ws, "registers=[64, 216], single_issuer=1, mbarriers"},
               {"async_barriers=1,", "async_barriers=1, persistent=1,"},
               {"  fill(C_f, 0.0)\n",
                "  fill(C_f, 0.0)\n  check(pid_m < 16, code=1, msg=\"m {}\", args=[pid_m])\n"}}),
      "warp-specialized loop k: single_issuer in a persistent kernel whose producer has a "
      "prologue (copies or index checks before the loop, which every producer thread runs)");
}

// No consumer fence (consumer_fence=0) only where the async proxy alone
// writes the ring: TMA copies, not cp.async.
TEST(TirVerifierPlan, NoConsumerFenceOnlyOverTmaCopies) {
  const char* const ws = "registers=[64, 216], mbarriers";
  EXPECT_EQ(verify_errors(planned({{ws, "registers=[64, 216], consumer_fence=0, mbarriers"}})),
            std::vector<std::string>{});
  expect_one_error(
      planned({{ws, "registers=[64, 216], consumer_fence=0, mbarriers"},
               {"plan(tma, width=16, map=0, boxes=[({k*64}, {pid_m*128}, smem=0)], bytes=16384)",
                "plan(cp_async, width=16)"}}),
      "warp-specialized loop k: consumer_fence=0, but its copy into A_s is not a TMA copy");
}

// .L1::no_allocate is a fragment copy's (register_a) load policy alone.
TEST(TirVerifierPlan, NoAllocateOnlyOnFragmentCopies) {
  expect_one_error(
      planned({{"plan(tma, width=16, map=0,", "plan(tma, width=16, no_allocate=1, map=0,"}}),
      "copy plan: no_allocate on a copy that is not a fragment copy");
}

// So is the L2 prefetch size, and it is 256 bytes when given.
TEST(TirVerifierPlan, L2PrefetchOnlyOnFragmentCopies) {
  expect_one_error(
      planned({{"plan(tma, width=16, map=0,", "plan(tma, width=16, l2_prefetch=256, map=0,"}}),
      "copy plan: l2_prefetch 256 (0, or 256 on a fragment copy)");
}

// So are 32-bit word loads into wgmma's register order.
TEST(TirVerifierPlan, WordLoadsOnlyOnFragmentCopies) {
  expect_one_error(
      planned({{"plan(tma, width=16, map=0,", "plan(tma, width=16, word_loads=1, map=0,"}}),
      "copy plan: word_loads on a copy that is not a fragment copy");
}

// The staged tile (BLOCK_M x pitch of the output dtype, at offset 0) fits
// below the mbarriers.
TEST(TirVerifierPlan, StagedEpilogueFitsBelowTheMbarriers) {
  expect_one_error(planned({{"staged, pitch=136,", "staged, pitch=392,"}}),
                   "a staged epilogue's tile of 100352 bytes (128 rows of 392 f16) exceeds the "
                   "98304 bytes below the mbarriers");
}

// A copy loaded a tile ahead (prefetch_prologue) exists only in a
// persistent kernel's prologue, register-staged in scalar slots.
TEST(TirVerifierPlan, NextTileOnlyInAPersistentPrologue) {
  const char* fill = "  fill(C_f, 0.0)\n";
  const char* staged =
      "  alloc t: shared f16[128] plan(row_major, stages=1, offset=98432, bytes=256)\n"
      "  copy (r: 128) t[r] = x[pid_m*128 + r, 0] plan(register, width=2, slots=1, "
      "next_tile=1)\n"
      "  fill(C_f, 0.0)\n";
  const std::pair<const char*, const char*> bytes{"shared_bytes=98352", "shared_bytes=98688"};
  expect_one_error(planned({{fill, staged}, bytes}),
                   "copy plan: next_tile in a kernel that is not persistent (no next tile)");
  EXPECT_EQ(verify_errors(planned({{fill, staged}, bytes, {"async_barriers=1", "async_barriers=1, persistent=1"}})),
            std::vector<std::string>{});
  std::string no_slots = staged;
  no_slots.replace(no_slots.find("slots=1, "), 9, "");
  expect_one_error(planned({{fill, no_slots.c_str()}, bytes,
                            {"async_barriers=1", "async_barriers=1, persistent=1"}}),
                   "copy plan: next_tile on a copy that is not register-staged in scalar slots");
}

// The staged form's fields (stmatrix, the proved chunks, the pair cast)
// only on a staged epilogue; chunk_mask_varies only with proved chunks; a
// pair cast only where the stored value is a cast of f32 to f16 / bf16.
TEST(TirVerifierPlan, StagedFieldsOnlyOnAStagedEpilogue) {
  expect_one_error(
      planned({{"plan(staged, pitch=136, stmatrix=1, contiguous_chunks=1, pair_cast=1)",
                "plan(paired, contiguous_chunks=1)"}}),
      "a paired epilogue with a staged epilogue's field");
  expect_one_error(planned({{"contiguous_chunks=1", "chunk_mask_varies=1"}}),
                   "a staged epilogue with chunk_mask_varies but not contiguous_chunks");
  EXPECT_EQ(verify_errors(planned({{"contiguous_chunks=1", "contiguous_chunks=1, "
                                                           "chunk_mask_varies=1"}})),
            std::vector<std::string>{});
  expect_one_error(planned({{"f16(C_f[i_2, j_2])", "f16(f64(C_f[i_2, j_2]))"}}),
                   "a staged epilogue with pair_cast whose store into out is not a cast of an f32 "
                   "value to f16 or bf16");
}

// Without a plan (a CPU kernel, or before the backend passes) nothing of
// this is checked.
TEST(TirVerifierPlan, OnlyWhereThePlanExists) {
  EXPECT_EQ(verify_errors(testing::gemm_kernel()), std::vector<std::string>{});
  // Before layout a shared plan holds only lower_gemm's swizzle (offset -1).
  EXPECT_EQ(verify_errors(planned(
                {{"plan(swizzled, stages=3, offset=0, bytes=49152)", "plan(swizzled, stages=1)"}})),
            std::vector<std::string>{});
  EXPECT_EQ(verify_errors(parse_kernel(R"(kernel k(
  h: global readonly f16[4096] strides [1] align 16,
) grid(p: 32) {
  alloc s: shared f16[128] plan(row_major, stages=1)
  copy (i: 128) s[i] = h[p*128 + i] plan(direct, width=2)
}
)")),
            std::vector<std::string>{});
}

}  // namespace
// The split tail (PipelinePlan::split_tail): a constant trip count above it,
// the accumulator a wgmma tile of two chains and 64 rows a warpgroup; two
// chains only on such a tile.
TEST(TirVerifierPlan, SplitTailNeedsTwoChainsAndAShorterLoop) {
  const char* const ws = "registers=[64, 216], mbarriers";
  const char* const chains = "warps=[2, 1])";
  EXPECT_EQ(verify_errors(planned({{ws, "registers=[64, 216], split_tail=2, mbarriers"},
                                   {chains, "warps=[2, 1], chains=2)"}})),
            std::vector<std::string>{});
  expect_one_error(planned({{ws, "registers=[64, 216], split_tail=3, mbarriers"},
                            {chains, "warps=[2, 1], chains=2)"}}),
                   "warp-specialized loop k: split_tail 3 in a ring of 3 stages (the tail's last "
                   "stage is refilled only once the stage before the tail is released)");
  expect_one_error(planned({{ws, "registers=[64, 216], split_tail=2, mbarriers"}}),
                   "warp-specialized loop k: split_tail without one gemm into a wgmma accumulator "
                   "of two chains and 64 rows a warpgroup (N halves of 64 columns or more)");
  expect_one_error(planned({{ws, "registers=[64, 216], split_tail=2, mbarriers"},
                            {chains, "warps=[2, 1], chains=2)"},
                            {"pipelined(0, 32,", "pipelined(0, 2,"}}),
                   "warp-specialized loop k: split_tail 2 needs a constant trip count above it");
  expect_one_error(planned({{chains, "warps=[1, 1], chains=2)"}}),
                   "fragment C_f: 2 chains (1, or 2 on a wgmma tile of 64 rows a warpgroup and N "
                   "halves of 64 columns or more)");
}

// A per-warp epilogue takes one buffer a warp, or 2 to kMaxWarpSlabBuffers
// (8) where its slabs go out by TMA (CudaOptions::slab_buffers_all), within
// the launch's shared bytes: 8 MMA warps' B buffers at 99328 end at 99328 +
// 16384 B.
TEST(TirVerifierPlan, PerWarpSlabBuffersOneOrTwoToEightByTma) {
  auto per_warp = [](int buffers, bool tma) {
    const std::string plan = fmt::format(
        "staged, stmatrix=1, contiguous_chunks=1, pair_cast=1, offset=99328, {}per_warp=1, "
        "slab_buffers={}",
        tma ? "tma_store=2, " : "", buffers);
    const std::string bytes = fmt::format("shared_bytes={}", 99328 + 16384 * buffers);
    return planned({{"staged, pitch=136, stmatrix=1, contiguous_chunks=1, pair_cast=1", plan.c_str()},
                    {"shared_bytes=98352", bytes.c_str()},
                    {"swizzle=128)]", "swizzle=128), (param=2, elem=2, dims=[2048, 2048], "
                                      "strides=[4096], box=[64, 16], swizzle=128)]"}});
  };
  for (int buffers : {1, 2, 4, 8})
    EXPECT_EQ(verify_errors(per_warp(buffers, true)), std::vector<std::string>{}) << buffers;
  EXPECT_EQ(verify_errors(per_warp(1, false)), std::vector<std::string>{});
  expect_one_error(per_warp(9, true),
                   "a per-warp staged epilogue with 9 buffers a warp (1, or 2 to 8 with TMA "
                   "stores)");
  expect_one_error(per_warp(4, false),
                   "a per-warp staged epilogue with 4 buffers a warp (1, or 2 to 8 with TMA "
                   "stores)");
}

}  // namespace tilefuse::tir
