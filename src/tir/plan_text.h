// The text form of the kernel plan (tir/plan.h): each plan part as a
// `plan(...)` clause, a list of items `word` or `key=value`, where a value
// is an integer, a number, a "string", a word, an expression in braces
// `{e}`, a list `[v, ...]` or a nested clause `(item, ...)`. The printer and
// the parser (tir/printer.h, tir/parser.h) go through these trees, so each
// plan part is converted in one place, both ways.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tir/ir.h"

namespace tilefuse::tir {

struct PlanItem;

struct PlanValue {
  enum class Kind { Int, Float, String, Word, Expr, List, Clause };
  Kind kind = Kind::Int;
  int64_t i = 0;
  double f = 0;
  std::string s;  // String, Word
  tir::Expr e;
  std::vector<PlanItem> items;  // List (no keys), Clause

  static PlanValue integer(int64_t v);
  static PlanValue string(std::string v);
  static PlanValue word(std::string v);
  static PlanValue expr(tir::Expr v);
  static PlanValue list(std::vector<PlanItem> v);
  static PlanValue clause(std::vector<PlanItem> v);
};

struct PlanItem {
  std::string key;  // empty: a positional item
  PlanValue value;
};
using PlanClause = std::vector<PlanItem>;

// A malformed clause (a missing or unknown key, a value of the wrong kind);
// the parser reports it at the clause.
struct PlanTextError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Plan part -> clause. The first item is the part's kind as a word
// (`cp_async`, `swizzled`, `wgmma`, `warp_specialized`, `staged`, ...).
PlanClause to_clause(const CopyPlan& p);
PlanClause to_clause(const BufferPlan& p);  // SharedPlan or FragmentPlan
PlanClause to_clause(const LoopPlan& p);    // PipelinePlan or EpiloguePlan
PlanClause to_clause(const LaunchPlan& p);

// Clause -> plan part; PlanTextError when malformed. A copy plan's
// vector load comes back as the expression read; the parser replaces it by
// the structurally equal load of the copy's value.
CopyPlan copy_plan_from(const PlanClause& c);
BufferPlan buffer_plan_from(const PlanClause& c, MemScope scope);
LoopPlan loop_plan_from(const PlanClause& c);
LaunchPlan launch_plan_from(const PlanClause& c);

// `plan(...)` with expressions printed by `expr`.
std::string print_clause(const PlanClause& c, const std::function<std::string(const Expr&)>& expr);

}  // namespace tilefuse::tir
