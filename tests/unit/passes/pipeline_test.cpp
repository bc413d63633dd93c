// The pass table: order, dumps, unknown names, and the verifier after each pass.
#include "passes/pipeline.h"

#include <gtest/gtest.h>

#include <sstream>

#include "../tir/test_kernels.h"
#include "pass_test_util.h"

namespace tilefuse::passes {
namespace {

TEST(Pipeline, TargetIndependentOrder) {
  std::vector<std::string> names;
  for (const PassEntry& p : target_independent_passes()) {
    names.emplace_back(p.name);
    EXPECT_FALSE(p.why.empty()) << p.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"simplify", "cse", "licm", "dce"}));
  names.clear();
  for (const PassEntry& p : cpu_passes()) {
    names.emplace_back(p.name);
    EXPECT_FALSE(p.why.empty()) << p.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"lower_copies", "pack_gemm_operands"}));
}

// The target-independent table followed by the CPU's.
std::vector<PassEntry> cpu_table() {
  std::vector<PassEntry> t = target_independent_passes();
  t.insert(t.end(), cpu_passes().begin(), cpu_passes().end());
  return t;
}

const char* kInput = R"(  let c = 4
  for i in serial(0, 1) {
    iout[n*c + i] = (n*c + i)*2
  }
  let unused = x[0]
  iout[0] = 1
)";

TEST(Pipeline, DumpAfterOnePass) {
  std::ostringstream dump;
  PipelineOptions opts;
  opts.dump_after = "simplify";
  opts.dump = &dump;
  tir::Kernel k = tir::parse_kernel(testing::kernel_text(kInput));
  tir::Kernel out = run_passes(k, target_independent_passes(), {tir::Target::cpu()}, opts);
  EXPECT_EQ(dump.str(), "# after simplify\n" + testing::kernel_text(R"(  iout[n*4] = n*8
  let unused = x[0]
  iout[0] = 1
)"));
  EXPECT_EQ(tir::print(out), testing::kernel_text("  iout[n*4] = n*8\n  iout[0] = 1\n"));
}

TEST(Pipeline, DumpAfterAll) {
  std::ostringstream dump;
  PipelineOptions opts;
  opts.dump_after = "all";
  opts.dump = &dump;
  run_passes(tir::parse_kernel(testing::kernel_text(kInput)), cpu_table(), {tir::Target::cpu()},
             opts);
  std::string text = dump.str();
  size_t s = text.find("# after simplify\n"), c = text.find("# after cse\n"),
         l = text.find("# after licm\n"), lc = text.find("# after lower_copies\n"),
         d = text.find("# after dce\n");
  EXPECT_TRUE(s != std::string::npos && c != std::string::npos && d != std::string::npos) << text;
  EXPECT_TRUE(l != std::string::npos && lc != std::string::npos) << text;
  EXPECT_TRUE(s < c && c < l && l < d && d < lc) << text;
}

TEST(Pipeline, NoDumpByDefault) {
  std::ostringstream dump;
  PipelineOptions opts;
  opts.dump = &dump;
  run_passes(tir::testing::gather_kernel(), target_independent_passes(), {}, opts);
  EXPECT_EQ(dump.str(), "");
}

TEST(Pipeline, UnknownDumpAfterNameIsAUserError) {
  PipelineOptions opts;
  opts.dump_after = "licmm";
  try {
    run_passes(tir::testing::gemm_kernel(), cpu_table(), {}, opts);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown pass 'licmm' for --dump-after; valid names: simplify, cse, licm, "
              "dce, lower_copies, pack_gemm_operands, all");
  }
}

TEST(Pipeline, VerifierNamesTheBrokenPass) {
  // A pass that stores an f32 into an i32 buffer.
  std::vector<PassEntry> passes = target_independent_passes();
  passes.insert(
      passes.begin() + 1,
      {"broken",
       [](const tir::Kernel& k, const PassContext&) {
         tir::Kernel out = k;
         tir::Buffer iout = k.params.back().buffer;
         out.body = tir::make_seq({k.body, tir::StoreNode::make(iout, {tir::Expr(0)},
                                                                tir::make_const(DType::F32, 1.0))});
         return out;
       },
       "a test"});
  tir::Kernel k = tir::parse_kernel(testing::kernel_text("  iout[0] = 1\n"));
  try {
    run_passes(k, passes, {}, {});
    FAIL() << "no error";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("after broken"), std::string::npos) << e.what();
  }
  PipelineOptions no_verify;
  no_verify.verify = false;
  EXPECT_NO_THROW(run_passes(k, passes, {}, no_verify));
}

TEST(Pipeline, HooksAreAnErrorAfterInlineHooks) {
  tir::Kernel gemm = tir::testing::gemm_kernel();  // has load_input / store_output
  EXPECT_NO_THROW(run_passes(gemm, target_independent_passes(), {}, {}));
  std::vector<PassEntry> passes = target_independent_passes();
  passes.insert(passes.begin(),
                {"inline_hooks", [](const tir::Kernel& k, const PassContext&) { return k; },
                 "a stand-in that leaves the hooks"});
  try {
    run_passes(gemm, passes, {}, {});
    FAIL() << "no error";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("after inline_hooks"), std::string::npos) << e.what();
  }
}

TEST(Pipeline, TemplateKernelsStayWellFormed) {
  for (const tir::Kernel& k : {tir::testing::gemm_kernel(), tir::testing::gather_kernel()}) {
    tir::Kernel out = run_passes(k, target_independent_passes(), {tir::Target::cuda(80)}, {});
    EXPECT_EQ(tir::verify_errors(out), std::vector<std::string>{}) << tir::print(out);
  }
}

}  // namespace
}  // namespace tilefuse::passes
