// `tilefuse explain`: the account of every decision the compiler made for a
// program — the plan's kernels, the graph ops fused into each (the prologue
// of every GEMM operand, the epilogue), what licm hoisted out of which loop,
// how every copy is done on the target (mode, width, reason), the template
// config and, for a CUDA target, the lowering the emitter made (block and
// grid, shared buffers with their layout and stages, the gemm family, the
// copies as emitted; no NVRTC, no GPU) — as JSON (the machine-readable form tests and users rely
// on; README.md documents every key) and as text rendered from that JSON, so
// the two can never disagree.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "driver/compile.h"

namespace tilefuse::driver {

// The account of `program` (compiled with optimize on), for the program
// named `name`.
nlohmann::json explain(const CompiledProgram& program, const std::string& name);

// The same account for people: one block per kernel, then the decisions.
std::string render_explain_text(const nlohmann::json& account);

}  // namespace tilefuse::driver
