#include "frontend/operand.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace tilefuse::frontend {

Operand Operand::tensor(ValueId v, SourceLoc loc) {
  Operand op;
  op.kind = Kind::Tensor;
  op.value = v;
  op.loc = loc;
  return op;
}

Operand Operand::integer(int64_t v, SourceLoc loc) {
  Operand op;
  op.kind = Kind::Int;
  op.int_value = v;
  op.loc = loc;
  return op;
}

Operand Operand::floating(double v, SourceLoc loc) {
  Operand op;
  op.kind = Kind::Float;
  op.float_value = v;
  op.loc = loc;
  return op;
}

Operand Operand::boolean(bool v, SourceLoc loc) {
  Operand op;
  op.kind = Kind::Bool;
  op.int_value = v ? 1 : 0;
  op.loc = loc;
  return op;
}

Operand Operand::none(SourceLoc loc) {
  Operand op;
  op.kind = Kind::None;
  op.loc = loc;
  return op;
}

Operand Operand::of_dtype(DType dt, SourceLoc loc) {
  Operand op;
  op.kind = Kind::DType;
  op.dtype = dt;
  op.loc = loc;
  return op;
}

Operand Operand::module(std::string path, std::string spelling, SourceLoc loc) {
  Operand op;
  op.kind = Kind::Module;
  op.path = std::move(path);
  op.spelling = std::move(spelling);
  op.loc = loc;
  return op;
}

Operand Operand::function(std::string path, std::string spelling, SourceLoc loc) {
  Operand op;
  op.kind = Kind::Function;
  op.path = std::move(path);
  op.spelling = std::move(spelling);
  op.loc = loc;
  return op;
}

Operand Operand::string(std::string_view contents, SourceLoc loc) {
  Operand op;
  op.kind = Kind::String;
  op.path = std::string(contents);
  op.loc = loc;
  return op;
}

std::string describe(const Operand& op) {
  switch (op.kind) {
    case Operand::Kind::Tensor:
      return "a tensor";
    case Operand::Kind::Int:
      return fmt::format("the integer {}", op.int_value);
    case Operand::Kind::Float: {
      // As Python prints a float: 2.0, not 2 (fmt's shortest round trip,
      // like the graph printer's scalars).
      std::string s = fmt::format("{}", op.float_value);
      if (s.find_first_of(".en") == std::string::npos) s += ".0";
      return "the number " + s;
    }
    case Operand::Kind::Bool:
      return op.int_value ? "True" : "False";
    case Operand::Kind::None:
      return "None";
    case Operand::Kind::DType:
      return fmt::format("the dtype {}", dtype_name(op.dtype));
    case Operand::Kind::Module:
      return fmt::format("module '{}'", op.path);
    case Operand::Kind::Function:
      return fmt::format("function '{}'", op.path);
    case Operand::Kind::Tuple:
      return "a tuple";
    case Operand::Kind::List:
      return "a list";
    case Operand::Kind::String:
      return "a string";
  }
  return "a value";
}

SourceLoc span(SourceLoc a, SourceLoc b) {
  if (!a.valid()) return b;
  if (!b.valid() || a.line != b.line || b.col + b.length <= a.col) return a;
  return SourceLoc{a.line, a.col, b.col + b.length - a.col};
}

ValueId to_tensor(Graph& g, const Operand& op, std::string_view what) {
  switch (op.kind) {
    case Operand::Kind::Tensor:
      return op.value;
    case Operand::Kind::Int:
      return g.int_scalar(op.int_value, DType::I64, op.loc);
    case Operand::Kind::Float:
      return g.scalar(op.float_value, DType::F64, op.loc);
    case Operand::Kind::Bool:
      return g.int_scalar(op.int_value, DType::Bool, op.loc);
    default:
      throw UserError(
          fmt::format("expected a tensor or a number for {}, found {}", what, describe(op)),
          op.loc);
  }
}

ValueId expect_tensor(const Operand& op, std::string_view what) {
  if (op.kind != Operand::Kind::Tensor)
    throw UserError(fmt::format("expected a tensor for {}, found {}", what, describe(op)), op.loc);
  return op.value;
}

int64_t expect_int(const Operand& op, std::string_view what) {
  // A bool is a Python int, but `transpose(True, 0)` is certainly a mistake.
  if (op.kind != Operand::Kind::Int)
    throw UserError(fmt::format("expected an integer for {}, found {}", what, describe(op)),
                    op.loc);
  return op.int_value;
}

double expect_number(const Operand& op, std::string_view what) {
  if (!op.is_number())
    throw UserError(fmt::format("expected a number for {}, found {}", what, describe(op)), op.loc);
  return op.number();
}

DType expect_dtype(const Operand& op, std::string_view what) {
  if (op.kind != Operand::Kind::DType)
    throw UserError(fmt::format("expected a dtype (such as torch.float16) for {}, found {}", what,
                                describe(op)),
                    op.loc);
  return op.dtype;
}

std::vector<int64_t> expect_int_list(const std::vector<Operand>& ops, std::string_view what,
                                     SourceLoc loc) {
  const std::vector<Operand>* items = &ops;
  if (ops.size() == 1 &&
      (ops[0].kind == Operand::Kind::Tuple || ops[0].kind == Operand::Kind::List))
    items = &ops[0].items;
  std::vector<int64_t> out;
  out.reserve(items->size());
  for (const Operand& op : *items) out.push_back(expect_int(op, what));
  return out;
}

namespace {

// Edit distance with adjacent transpositions (the optimal string alignment
// form of the Damerau-Levenshtein distance: `rleu` is one edit from `relu`,
// a typo as common as a wrong letter), case-insensitive (so `X` suggests
// `x`); a length difference over `limit` returns `limit + 1` at once.
size_t edit_distance(std::string_view a, std::string_view b, size_t limit) {
  if (a.size() > b.size() + limit || b.size() > a.size() + limit) return limit + 1;
  auto low = [](char c) { return std::tolower(static_cast<unsigned char>(c)); };
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = low(a[i - 1]) == low(b[j - 1]);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && low(a[i - 1]) == low(b[j - 2]) && low(a[i - 2]) == low(b[j - 1]))
        cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::optional<std::string> closest(std::string_view name,
                                   const std::vector<std::string>& candidates) {
  // One edit for short names, a third of the length for longer ones: close
  // enough to be a typo. A one-letter name only matches another case (`X`
  // for `x`); suggesting `y` for `x` would be a guess.
  size_t limit = name.size() <= 1 ? 0 : std::max<size_t>(1, name.size() / 3);
  const std::string* best = nullptr;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    if (c == name) continue;
    size_t d = edit_distance(name, c, limit);
    if (d < best_distance) {
      best_distance = d;
      best = &c;
    }
  }
  if (!best) return std::nullopt;
  return *best;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates,
                         std::string_view prefix) {
  std::optional<std::string> best = closest(name, candidates);
  return best ? fmt::format("; did you mean '{}{}'?", prefix, *best) : "";
}

}  // namespace tilefuse::frontend
