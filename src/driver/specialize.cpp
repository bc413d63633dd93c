// Binding symbols and choosing a specialization for a call (see specialize.h).
#include "driver/specialize.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace tilefuse::driver {
namespace {

constexpr int64_t kI32Limit = int64_t{1} << 31;
constexpr int64_t kOverhang = 256;  // the largest tile extent past a dim's end

std::string param_type(const Graph& g, const Node& p) {
  return std::string(dtype_name(p.dtype)) + symbolic_shape_string(g, p);
}


int alignment_of(uint64_t address) {
  if (address == 0) return 16;
  int a = 1;
  while (a < 16 && address % static_cast<uint64_t>(2 * a) == 0) a *= 2;
  return a;
}

}  // namespace

ArgDesc ArgDesc::of(const Tensor& t) {
  ArgDesc a;
  a.dtype = t.dtype();
  a.shape = t.shape();
  a.strides = t.strides();
  return a;
}

void check_input_count(const Graph& g, size_t count) {
  if (count != g.parameters().size())
    throw UserError(ErrorKind::kValue, fmt::format("the program takes {} inputs, got {}",
                                                   g.parameters().size(), count));
}

Binding bind_symbols(const Graph& g, const std::vector<ArgDesc>& inputs) {
  const std::vector<ValueId>& params = g.parameters();
  check_input_count(g, inputs.size());
  Binding b(g.symbols().size(), -1);
  std::vector<std::pair<size_t, size_t>> first(g.symbols().size());  // (param, dim) that bound it
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Node& p = g.node(params[i]);
    const ArgDesc& a = inputs[i];
    if (a.dtype != p.dtype)
      throw UserError(ErrorKind::kType, fmt::format("input `{}` must be {}, got {}", p.name,
                                                    dtype_name(p.dtype), dtype_name(a.dtype)));
    if (a.shape.size() != p.shape.size())
      throw UserError(ErrorKind::kValue,
                      fmt::format("input `{}` must have {} dim{} ({}), got {} ({})", p.name,
                                  p.shape.size(), p.shape.size() == 1 ? "" : "s",
                                  param_type(g, p), a.shape.size(), shape_to_string(a.shape)));
    TF_CHECK(a.strides.size() == a.shape.size(), "an argument with a stride per dim expected");
    for (size_t d = 0; d < a.shape.size(); ++d) {
      const SymbolId s = p.symbol(d);
      if (a.shape[d] < 0)
        throw UserError(ErrorKind::kValue, fmt::format("input `{}`: dim {} has the negative size {}",
                                                       p.name, d, a.shape[d]));
      if (s == kFixedDim) {
        if (a.shape[d] != p.shape[d])
          throw UserError(ErrorKind::kValue,
                          fmt::format("input `{}` ({}): dim {} must be {}, got {} (shape {})",
                                      p.name, param_type(g, p), d, p.shape[d], a.shape[d],
                                      shape_to_string(a.shape)));
        continue;
      }
      if (b[s] < 0) {
        b[s] = a.shape[d];
        first[s] = {i, d};
      } else if (b[s] != a.shape[d]) {
        const Node& q = g.node(params[first[s].first]);
        throw UserError(ErrorKind::kValue,
                        fmt::format("symbolic dim `{}` is {} in `{}` (dim {}) but {} in `{}` (dim {})",
                                    g.symbols()[s].name, b[s], q.name, first[s].second,
                                    a.shape[d], p.name, d));
      }
    }
  }
  // Every symbol appears in some parameter's shape (the parser declares
  // them there), so every one is bound now.
  for (size_t s = 0; s < b.size(); ++s)
    TF_CHECK(b[s] >= 0, "symbol " + g.symbols()[s].name + " not bound by any input");
  // Tensors stay within graph.h's size limit at this binding.
  for (const Node& n : g.nodes()) {
    const Shape shape = bound_shape(n, b);
    const std::string problem = size_limit_violation(shape);
    if (!problem.empty())
      throw UserError(ErrorKind::kValue,
                      fmt::format("at {} the program has a tensor that is too large: {} ({}{}) {}",
                                  binding_string(g, b), describe_value(n), dtype_name(n.dtype),
                                  shape_to_string(shape), problem),
                      n.loc);
  }
  return b;
}

Binding bind_symbols(const Graph& g, const std::vector<Tensor>& inputs) {
  std::vector<ArgDesc> args;
  args.reserve(inputs.size());
  for (const Tensor& t : inputs) args.push_back(ArgDesc::of(t));
  return bind_symbols(g, args);
}

SymbolValues symbol_values(const Graph& g, const Binding& b) {
  SymbolValues v;
  for (size_t s = 0; s < g.symbols().size(); ++s) v[g.symbols()[s].name] = b.at(s);
  return v;
}

Binding binding_of(const Graph& g, const SymbolValues& values, const std::string& how) {
  // A name the program does not have first: it is likely the misspelling of
  // the one that is then reported missing.
  for (const auto& [name, value] : values)
    if (g.find_symbol(name) == kFixedDim)
      throw UserError(ErrorKind::kValue,
                      fmt::format("`{}` is not a symbolic dim of the program", name));
  Binding b;
  // The missing names, the first kListed of them (a program may have
  // thousands: the message stays a line).
  constexpr size_t kListed = 8;
  std::string missing;
  size_t n_missing = 0;
  for (const Symbol& s : g.symbols()) {
    auto it = values.find(s.name);
    if (it == values.end()) {
      if (n_missing++ < kListed) missing += (missing.empty() ? "" : ", ") + s.name;
      b.push_back(-1);
    } else {
      b.push_back(it->second);
    }
  }
  if (n_missing > kListed) missing += fmt::format(" and {} more", n_missing - kListed);
  if (n_missing > 0)
    throw UserError(
        ErrorKind::kValue,
        fmt::format("the program's symbolic dim{} {} need{} a size: {}", n_missing == 1 ? "" : "s",
                    missing, n_missing == 1 ? "s" : "", how));
  return b;
}

Shape bound_shape(const Node& n, const Binding& b) {
  Shape s = n.shape;
  for (size_t d = 0; d < s.size(); ++d)
    if (n.symbol(d) != kFixedDim) s[d] = b.at(static_cast<size_t>(n.symbol(d)));
  return s;
}

std::string binding_string(const Graph& g, const Binding& b) {
  std::string s;
  for (size_t i = 0; i < g.symbols().size(); ++i)
    s += fmt::format("{}{}={}", i ? ", " : "", g.symbols()[i].name, b.at(i));
  return s;
}

int64_t size_bucket(int64_t value) {
  if (value <= 1) return value;
  int64_t p = 1;
  while (p < value && p < (int64_t{1} << 62)) p *= 2;
  return p;
}

int64_t offset_reach(const Shape& shape, const std::vector<int64_t>& strides) {
  int64_t reach = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    // (INT64_MIN, which the C API accepts on a size-1 dim, has no magnitude
    // in int64: it reaches past every limit)
    if (strides[d] == INT64_MIN) return INT64_MAX;
    const int64_t st = strides[d] < 0 ? -strides[d] : strides[d];
    int64_t term = 0;
    if (__builtin_mul_overflow(shape[d] + kOverhang, st, &term) ||
        __builtin_add_overflow(reach, term, &reach))
      return INT64_MAX;
  }
  return reach;
}

namespace {

// A layout's strides as specialize() compiles them: a size-1 dim's is 0.
std::vector<int64_t> normalized_strides(const ArgDesc& a) {
  std::vector<int64_t> st(a.strides.size());
  for (size_t d = 0; d < st.size(); ++d) st[d] = a.shape[d] == 1 ? 0 : a.strides[d];
  return st;
}

}  // namespace

bool StridePolicy::observe(const Graph& g, const std::vector<ArgDesc>& inputs) {
  if (!g.symbols().empty()) return false;
  bool changed = false;
  const size_t n = std::min(inputs.size(), g.parameters().size());
  first_.resize(g.parameters().size());
  runtime_.resize(g.parameters().size());
  for (size_t i = 0; i < n; ++i) {
    const ArgDesc& a = inputs[i];
    if (is_contiguous(a.shape, a.strides)) continue;
    std::vector<int64_t> st = normalized_strides(a);
    if (first_[i].empty()) {
      first_[i] = std::move(st);
      runtime_[i].assign(first_[i].size(), false);
      continue;
    }
    if (first_[i].size() != st.size()) continue;  // (a rank bind_symbols refuses)
    for (size_t d = 0; d < st.size(); ++d)
      if (st[d] != first_[i][d] && !runtime_[i][d]) {
        runtime_[i][d] = true;
        changed = true;
      }
  }
  return changed;
}

Specialization StridePolicy::specialize_observed(const Graph& g, const Binding& b,
                                                 const std::vector<ArgDesc>& inputs) {
  Specialization spec = specialize(g, b, inputs, &runtime_);
  if (observe(g, inputs)) spec = specialize(g, b, inputs, &runtime_);
  return spec;
}

Specialization specialize(const Graph& g, const Binding& b, const std::vector<ArgDesc>& inputs,
                          const std::vector<std::vector<bool>>* runtime_strides) {
  Specialization spec;
  const bool symbolic = !g.symbols().empty();
  bool any_runtime = false;
  for (size_t s = 0; s < g.symbols().size(); ++s) {
    spec.divisible_by_16.push_back(b[s] % 16 == 0);
    spec.size_hints.push_back(size_bucket(b[s]));
  }
  // The index width: every value at its bound shape, contiguous, and every
  // input with its own strides.
  bool fits = true;
  for (const Node& n : g.nodes()) {
    const Shape shape = bound_shape(n, b);
    if (offset_reach(shape, contiguous_strides(shape)) >= kI32Limit) fits = false;
  }
  bool all_plain = true;
  std::vector<ParamLayout> layouts;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Node& p = g.node(g.parameters()[i]);
    const ArgDesc& a = inputs[i];
    if (offset_reach(a.shape, a.strides) >= kI32Limit) fits = false;
    ParamLayout layout;
    const size_t elem = dtype_size(a.dtype);
    if (a.address % elem != 0)
      throw UserError(ErrorKind::kValue,
                      fmt::format("input `{}` is at address 0x{:x}, not a multiple of its element "
                                  "size ({} bytes)",
                                  p.name, a.address, elem));
    layout.alignment = std::max<int>(alignment_of(a.address), static_cast<int>(elem));
    for (size_t d = 0; d < a.strides.size(); ++d)
      if (a.strides[d] < 0 && a.shape[d] > 1)
        throw UserError(ErrorKind::kValue,
                        fmt::format("input `{}` has the negative stride {} in dim {}; pass a "
                                    "contiguous copy",
                                    p.name, a.strides[d], d));
    if (!is_contiguous(a.shape, a.strides)) {
      const std::vector<bool>* dynamic =
          runtime_strides && i < runtime_strides->size() ? &(*runtime_strides)[i] : nullptr;
      const std::vector<int64_t> strides = normalized_strides(a);
      for (size_t d = 0; d < strides.size(); ++d) {
        const int64_t st = strides[d];
        const bool at_run_time = symbolic || (dynamic && d < dynamic->size() && (*dynamic)[d]);
        if (!at_run_time || st == 0 || st == 1) {
          layout.strides.push_back(st);
          layout.stride_divisible_by_16.push_back(false);
        } else {
          layout.strides.push_back(ParamLayout::kRuntime);
          layout.stride_divisible_by_16.push_back(st % 16 == 0);
          any_runtime = true;
        }
      }
    }
    if (!layout.strides.empty() || layout.alignment != 16) all_plain = false;
    layouts.push_back(std::move(layout));
  }
  if (!all_plain) spec.params = std::move(layouts);
  spec.index64 = (symbolic || any_runtime) && !fits;
  return spec;
}

}  // namespace tilefuse::driver
