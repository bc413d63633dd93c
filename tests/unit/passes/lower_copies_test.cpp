// lower_copies' decision: mode, width and reason per copy, by target.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "driver/compile.h"
#include "frontend/frontend.h"
#include "tir/functor.h"
#include "lower/lower.h"
#include "passes/licm.h"
#include "passes/lower_copies.h"
#include "schedule/schedule.h"
#include "tir/builder.h"
#include "tir/parser.h"
#include "tir/printer.h"
#include "tir/verifier.h"

namespace tilefuse::passes {
namespace {

using tir::Target;

int64_t pow2_of(int64_t v) {
  return v & -v;
}

// The kernel with its K loop (the loop named k) warp-specialized, as
// warp_specialize marks the wgmma main loop on sm_90a: only there does
// lower_copies issue TMA.
tir::Kernel in_producer(const tir::Kernel& k) {
  struct Mark : tir::IRMutator {
    using IRMutator::visit;
    tir::Stmt visit(const tir::ForNode* op) override {
      tir::Stmt s = IRMutator::visit(op);
      if (op->var.name() != "k") return s;
      const auto* f = s.as<tir::ForNode>();
      tir::PipelinePlan p;
      p.form = tir::PipelineForm::WarpSpecialized;
      p.stages = std::max(f->num_stages, 1);
      return tir::ForNode::make(f->var, f->min, f->extent, f->for_kind, f->num_stages, f->body, p);
    }
  } mark;
  return mark.mutate_kernel(k);
}

// One copy dst[i, j] (32 x 64) from x[row, k*32*step... ] built for the
// property test: rows affine (pid*32 + i) or gathered (index[pid*32 + i]),
// columns k*64 + j*step, x row stride S, base alignment `align`.
struct Case {
  DType dtype;
  int step;   // 1: contiguous along j; 2: every other element
  int64_t S;  // row stride (elements)
  int align;  // base alignment (bytes)
  bool gather;
  bool convert;  // value is f32(load) into an f32 tile: not a plain load
};

tir::Kernel case_kernel(const Case& c) {
  tir::KernelBuilder b("copy_case");
  tir::Buffer x = b.input("x", c.dtype, {4096, tir::make_int(DType::I64, c.S)},
                          {tir::make_int(DType::I64, c.S), tir::make_int(DType::I64, 1)}, c.align);
  tir::Buffer index = b.input("index", DType::I64, {4096});
  tir::Var pid = b.program_id("pid", 16);
  DType dst_dtype = c.convert ? (c.dtype == DType::F32 ? DType::F64 : DType::F32) : c.dtype;
  tir::Buffer s = b.alloc("x_s", tir::MemScope::Shared, dst_dtype, {32, 64});
  b.serial("k", 8, [&](tir::Var k) {
    b.copy(s, [&](const std::vector<tir::Var>& ij) {
      tir::Expr row = pid * 32 + ij[0];
      tir::Expr r64 = c.gather ? tir::load(index, {row}) : tir::cast(DType::I64, row);
      tir::Expr col = tir::cast(DType::I64, k * 64 + ij[1] * c.step);
      tir::Expr v = tir::load(x, {r64, col}, row < 4096);
      return c.convert ? tir::cast(dst_dtype, v) : v;
    });
  });
  return b.build();
}

// dtype x contiguity x divisibility x target: every width is legal, no
// cp.async is narrower than 4 bytes, and cp.async is chosen exactly when a
// 4..16-byte vector is legal (computed here independently of axis_info).
TEST(LowerCopies, NoNarrowCpAsyncOverDtypeContiguityDivisibilityTarget) {
  int cp_async = 0, tma = 0, reg = 0, direct = 0;
  for (DType dt : {DType::F16, DType::BF16, DType::F32, DType::I8, DType::F64})
    for (int step : {1, 2})
      for (int64_t S : {2048, 1001, 1000, 1002, 1004, 1016})
        for (int align : {16, 8, 4, 2, 1})
          for (bool gather : {false, true})
            for (bool convert : {false, true})
              for (const char* tn : {"cpu", "sm_80", "sm_90a", "sm_90a+tma"}) {
                const int64_t elem = dtype_size(dt);
                if (align < elem) continue;
                Case c{dt, step, S, align, gather, convert};
                // "+tma": in a warp-specialized producer (the wgmma path).
                const bool with_tma = std::string(tn) == "sm_90a+tma";
                Target t = *Target::parse(with_tma ? "sm_90a" : tn);
                tir::Kernel k = case_kernel(c);
                tir::verify(k, "case");
                if (with_tma) k = in_producer(k);
                CopyReport report;
                tir::Kernel out = decide_copies(k, t, {}, &report);
                tir::verify(out, "after decide_copies");
                ASSERT_EQ(report.copies.size(), 1u);
                const CopyDecision& d = report.copies[0];
                std::string what = std::string(dtype_name(dt)) + " step " + std::to_string(step) +
                                   " S " + std::to_string(S) + " align " + std::to_string(align) +
                                   (gather ? " gather" : "") + (convert ? " convert" : "") + " " +
                                   tn + ": " + d.mode + " " + std::to_string(d.width) + " (" +
                                   d.reason + ")";
                SCOPED_TRACE(what);
                // Independent facts along j: the address moves by step
                // elements; a row starts at row*S (row unknown when gathered
                // or a program id), plus k*64, from a base aligned to align.
                const int64_t aligned = std::min<int64_t>({16, pow2_of(align), pow2_of(S) * elem});
                const int64_t contig = step == 1 ? 64 * elem : elem;
                auto legal = [&](int64_t w) {
                  return w % elem == 0 && w <= aligned && w <= contig;
                };
                if (!t.is_cuda()) {
                  EXPECT_EQ(d.mode, "direct");
                  ++direct;
                  continue;
                }
                if (d.mode == "cp_async") {
                  ++cp_async;
                  EXPECT_TRUE(d.width == 4 || d.width == 8 || d.width == 16);
                  EXPECT_TRUE(legal(d.width));
                  EXPECT_FALSE(convert);
                } else if (d.mode == "tma") {
                  ++tma;
                  EXPECT_TRUE(t.has_tma());
                  EXPECT_TRUE(with_tma);
                  EXPECT_FALSE(gather);
                  EXPECT_FALSE(convert);
                  EXPECT_EQ(step, 1);
                  EXPECT_EQ(align % 16, 0);
                  EXPECT_EQ((S * elem) % 16, 0);
                } else {
                  ASSERT_EQ(d.mode, "register");
                  ++reg;
                  EXPECT_TRUE(d.width == 1 || d.width == 2 || d.width == 4 || d.width == 8 ||
                              d.width == 16);
                  if (!convert) {
                    EXPECT_TRUE(legal(d.width));
                  }
                }
                // Completeness: a legal 4..16-byte plain copy is never
                // register-staged, and cp.async takes the widest width.
                int64_t best = 0;
                for (int64_t w : {16, 8, 4})
                  if (!best && legal(w)) best = w;
                if (!convert && best && d.mode != "tma") {
                  EXPECT_EQ(d.mode, "cp_async");
                  EXPECT_EQ(d.width, best);
                }
                if (!convert && !best) {
                  EXPECT_EQ(d.mode, "register");
                }
                // The decision is the copy's plan.
                EXPECT_NE(tir::print(out).find("plan(" + d.mode + ", width=" +
                                               std::to_string(d.width)),
                          std::string::npos);
              }
  EXPECT_GT(cp_async, 0);
  EXPECT_GT(tma, 0);
  EXPECT_GT(reg, 0);
  EXPECT_GT(direct, 0);
}

// The seed program's K loop (f16 or f32, K = 2048, A gathered by index),
// as licm leaves it: the wrapped row index materialized in shared memory.
std::string seed(const std::string& dt, int64_t K) {
  std::string k = std::to_string(K);
  return R"(kernel gather_mm(
  index: global readonly i64[2048],
  x: global readonly )" +
         dt + "[4096, " + k + "] strides [" + k + R"(, 1] align 16,
  y: global readonly )" +
         dt + "[" + k + R"(, 2048] strides [2048, 1] align 16,
  C: global f32[2048, 2048] strides [2048, 1],
) grid(pid_m: 16, pid_n: 32) {
  alloc A_s: shared )" +
         dt + R"([128, 32]
  alloc B_s: shared )" +
         dt + R"([32, 64]
  alloc C_f: fragment f32[128, 64]
  fill(C_f, 0.0)
  alloc index_rows: shared i64[128]
  copy (r: 128) index_rows[r] = select(index[pid_m*128 + r] < 0_i64, index[pid_m*128 + r] + 4096_i64, index[pid_m*128 + r])
  barrier()
  for k in pipelined(0, )" +
         std::to_string((K + 31) / 32) + R"(, stages=3) {
    copy (i: 128, j: 32) A_s[i, j] = load(x, [index_rows[i], i64(k*32 + j)], mask=(k*32 + j < )" +
         k + R"())
    copy (i_1: 32, j_1: 64) B_s[i_1, j_1] = load(y, [k*32 + i_1, pid_n*64 + j_1], mask=(k*32 + i_1 < )" +
         k + R"( && pid_n*64 + j_1 < 2048))
    gemm(A_s, B_s, C_f)
  }
}
)";
}

// On sm_90a the K loop is taken as warp-specialized (TMA allowed) unless
// `producer` is false.
CopyReport decide(const std::string& text, const char* target, bool producer = true) {
  tir::Kernel k = tir::parse_kernel(text);
  tir::verify(k, "input");
  if (producer && std::string(target) == "sm_90a") k = in_producer(k);
  CopyReport report;
  tir::Kernel out = decide_copies(k, *Target::parse(target), {}, &report);
  tir::verify(out, "after decide_copies");
  EXPECT_EQ(report.copies.size(), 3u) << tir::print(out);
  return report;
}

TEST(LowerCopies, SeedF16GatheredAIsCpAsync16) {
  for (const char* t : {"sm_80", "sm_90a"}) {
    CopyReport r = decide(seed("f16", 2048), t);
    ASSERT_EQ(r.copies.size(), 3u);
    EXPECT_EQ(r.copies[0].dst, "index_rows");
    EXPECT_EQ(r.copies[0].mode, "register");  // select math: not a plain load
    EXPECT_EQ(r.copies[1].dst, "A_s");
    EXPECT_EQ(r.copies[1].mode, "cp_async") << r.copies[1].reason;
    EXPECT_EQ(r.copies[1].width, 16);
    EXPECT_EQ(r.copies[2].dst, "B_s");
    if (std::string(t) == "sm_90a") {
      EXPECT_NE(r.copies[1].reason.find("gather: address depends on a loaded value"),
                std::string::npos)
          << r.copies[1].reason;
      // In a warp-specialized producer B is a TMA tile; elsewhere lower_copies
      // reports it TMA-eligible, issued as cp.async.
      EXPECT_EQ(r.copies[2].mode, "tma") << r.copies[2].reason;
      CopyReport rt = decide(seed("f16", 2048), t, /*producer=*/false);
      ASSERT_EQ(rt.copies.size(), 3u);
      EXPECT_EQ(rt.copies[2].mode, "cp_async") << rt.copies[2].reason;
      EXPECT_NE(rt.copies[2].reason.find("TMA-eligible"), std::string::npos)
          << rt.copies[2].reason;
    } else {
      EXPECT_EQ(r.copies[2].mode, "cp_async") << r.copies[2].reason;
    }
    EXPECT_EQ(r.copies[2].width, 16);
  }
}

TEST(LowerCopies, SeedF32Is16Bytes) {
  for (const char* t : {"sm_80", "sm_90a"}) {
    CopyReport r = decide(seed("f32", 2048), t);
    ASSERT_EQ(r.copies.size(), 3u);
    EXPECT_EQ(r.copies[1].mode, "cp_async") << r.copies[1].reason;
    EXPECT_EQ(r.copies[1].width, 16);
    EXPECT_EQ(r.copies[2].width, 16);
  }
}

TEST(LowerCopies, OddKGatherIsRegisterStagedForAlignment) {
  for (const char* t : {"sm_80", "sm_90a"}) {
    CopyReport r = decide(seed("f16", 1001), t);
    ASSERT_EQ(r.copies.size(), 3u);
    EXPECT_EQ(r.copies[1].mode, "register") << r.copies[1].reason;
    EXPECT_EQ(r.copies[1].width, 2);
    EXPECT_NE(r.copies[1].reason.find("is only 2-byte aligned"), std::string::npos)
        << r.copies[1].reason;
    // B (K rows of 2048 f16) is unaffected by the odd K (a TMA tile on sm_90a).
    EXPECT_EQ(r.copies[2].mode, std::string(t) == "sm_90a" ? "tma" : "cp_async")
        << r.copies[2].reason;
    EXPECT_EQ(r.copies[2].width, 16);
  }
}

TEST(LowerCopies, CpuIsDirectAndAnnotated) {
  tir::Kernel k = tir::parse_kernel(seed("f16", 2048));
  tir::Kernel out = decide_copies(k, Target::cpu());
  std::string text = tir::print(out);
  EXPECT_NE(
      text.find(
          R"(plan(direct, width=2, reason="cpu target: the executor copies element by element"))"),
      std::string::npos)
      << text;
  // Round trip: the plan is part of the text form.
  EXPECT_EQ(tir::print(tir::parse_kernel(text)), text);
}

// The whole compiler on the real programs (driver::compile, the target's
// pass table: on sm_90a lower_copies runs after warp_specialize). Returns
// the decision per destination buffer name.
std::map<std::string, CopyDecision> decide_program(const std::string& src, const char* target) {
  const Graph g = parse_program(src, "case.tfs").graph;
  driver::CompileOptions o;
  o.target = *Target::parse(target);
  const driver::CompiledProgram p = driver::compile(g, o);
  EXPECT_EQ(p.kernels.size(), 1u);
  std::map<std::string, CopyDecision> out;
  for (const CopyDecision& d : p.kernels.at(0).copies.copies) out[d.dst] = d;
  return out;
}

TEST(LowerCopies, SeedProgramEndToEnd) {
  for (const char* dt : {"f16", "f32"}) {
    const std::string src = std::string("def gather_mm(x: ") + dt + "[2048, 2048], y: " + dt +
                            "[2048, 2048], index: i64[2048]):\n    return x[index] @ y\n";
    for (const char* t : {"sm_80", "sm_90a"}) {
      auto d = decide_program(src, t);
      SCOPED_TRACE(std::string(dt) + " " + t);
      EXPECT_EQ(d["A_s"].mode, "cp_async") << d["A_s"].reason;
      EXPECT_EQ(d["A_s"].width, 16);
      // TMA only where a warp-specialized producer issues it: the f16 wgmma
      // loop on sm_90a (the f32 GEMM is exact FMA there, no producer).
      EXPECT_EQ(d["B_s"].mode,
                std::string(t) == "sm_90a" && std::string(dt) == "f16" ? "tma" : "cp_async")
          << d["B_s"].reason;
      EXPECT_EQ(d["B_s"].width, 16);
    }
  }
}

TEST(LowerCopies, OddKProgramEndToEnd) {
  const std::string src =
      "def odd_k(x: f16[300, 1001], y: f16[1001, 129], idx: i64[300]):\n"
      "    return x[idx] @ y\n";
  for (const char* t : {"sm_80", "sm_90a"}) {
    auto d = decide_program(src, t);
    EXPECT_EQ(d["A_s"].mode, "register") << d["A_s"].reason;
    EXPECT_NE(d["A_s"].reason.find("only 2-byte aligned"), std::string::npos) << d["A_s"].reason;
    // B's rows are 129 f16 apart: 2-byte aligned too, never a narrow cp.async.
    EXPECT_EQ(d["B_s"].mode, "register") << d["B_s"].reason;
  }
}

}  // namespace
}  // namespace tilefuse::passes
