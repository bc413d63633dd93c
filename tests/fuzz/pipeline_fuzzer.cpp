// libFuzzer target for the whole pipeline (run by run_fuzz.sh): parse, plan
// (both kinds), lower, the pass pipeline for the CPU and for sm_90a (the
// CUDA emitter included), explain, then the CPU executor and the reference
// evaluator on random inputs.
//
// Contract under test: every step either succeeds or throws UserError (a
// malformed program, an index out of range at run time, a program too large
// for the stack); nothing else escapes, nothing crashes, hangs or trips a
// sanitizer, at any size the input reaches. Programs whose tensors are large
// are parsed and compiled but not run (the executor would only be slow), so
// the run stays on tiny shapes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "core/error.h"
#include "driver/compile.h"
#include "driver/execute.h"
#include "driver/explain.h"
#include "frontend/frontend.h"
#include "reference/eval.h"
#include "reference/inputs.h"

namespace {

using namespace tilefuse;  // NOLINT

[[noreturn]] void bug(const char* what, const char* detail) {
  std::fprintf(stderr, "pipeline_fuzzer: %s: %s\n", what, detail);
  std::abort();
}

// Elements the graph's values hold in all: what running it costs.
int64_t total_elements(const Graph& g) {
  int64_t total = 0;
  for (const Node& n : g.nodes()) {
    total += shape_numel(n.shape);
    if (total > (int64_t{1} << 40)) break;
  }
  return total;
}

// One step that may only fail with a UserError.
template <class F>
bool user_step(const char* what, F f) {
  try {
    f();
    return true;
  } catch (const UserError& e) {
    if (std::string_view(e.what()).empty()) bug(what, "UserError with an empty message");
    return false;
  } catch (const std::exception& e) {
    bug(what, e.what());
  } catch (...) {
    bug(what, "an exception of unknown type");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  Program program;
  if (!user_step("parse", [&] { program = parse_program(source, "fuzz.tfs"); })) return 0;
  const Graph& g = program.graph;
  // Every kernel of both plans, for the CPU and the CUDA emitter.
  const bool small = total_elements(g) <= (int64_t{1} << 16);
  for (PlanKind kind : {PlanKind::kFused, PlanKind::kUnfused}) {
    driver::CompiledProgram cpu;
    driver::CompileOptions co;
    co.plan = kind;
    if (!user_step("compile (cpu)", [&] { cpu = driver::compile(g, co); })) continue;
    user_step("explain (cpu)", [&] { (void)driver::explain(cpu, program.name); });
    co.target = *tir::Target::parse("sm_90a");
    user_step("compile (sm_90a)", [&] {
      const driver::CompiledProgram cuda = driver::compile(g, co);
      (void)driver::explain(cuda, program.name);
    });
    if (!small) continue;
    std::vector<Tensor> inputs;
    if (!user_step("inputs", [&] { inputs = make_random_inputs(g, size, 1); })) return 0;
    driver::ExecuteOptions xo;
    xo.num_threads = 1;
    xo.poison_outputs = true;
    // An index error is the reference's: each plan raises it (the same
    // message) exactly where the reference does (x[i][0] @ w once ran with
    // i[1] out of range, as did a gather into an empty GEMM).
    // (Compared where both ran or failed on an index: another error, such
    // as a program too deep for one engine's stack, says nothing of it.)
    std::string executed = "ok", referenced = "ok";
    auto index_error = [](auto f, std::string* outcome) {
      try {
        f();
      } catch (const UserError& e) {
        *outcome = e.kind() == ErrorKind::kIndex ? std::string(e.what()) : std::string();
        throw;
      }
    };
    user_step("execute",
              [&] { index_error([&] { (void)driver::execute(cpu, inputs, xo); }, &executed); });
    EvalOptions eo;
    eo.num_threads = 1;
    user_step("reference",
              [&] { index_error([&] { (void)evaluate(g, inputs, eo); }, &referenced); });
    if (!executed.empty() && !referenced.empty() && executed != referenced)
      bug("execute and the reference disagree on an index error",
          ("executor: '" + executed + "', reference: '" + referenced + "'").c_str());
  }
  return 0;
}
