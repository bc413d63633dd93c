// KernelBuilder: how templates write Tile IR.
//
//   KernelBuilder b("gemm");
//   Var M = b.scalar_param("M");
//   Buffer A = b.input("A", DType::F16, {M, K}, {K, 1});
//   Var pid_m = b.program_id("pid_m", (M + 127) / 128);
//   Buffer A_s = b.alloc("A_s", MemScope::Shared, DType::F16, {128, 32});
//   b.serial("k", (K + 31) / 32, [&](Var k) {
//     b.copy(A_s, [&](const std::vector<Var>& ij) {
//       return b.load_input("A", {pid_m * 128 + ij[0], k * 32 + ij[1]}, DType::F16, mask);
//     });
//   });
//   Kernel kernel = b.build();
//
// Statements go to the innermost open block (a loop or branch body, while
// its lambda runs). `let` and `alloc` scope over the rest of their block.
// Nothing is folded or simplified here: `x * 1` stays `x * 1` until simplify.
// Operands are not type checked either; run verify() on the result.
//
// The operators below build IR nodes. A C++ number next to an Expr becomes a
// constant of the Expr's dtype (`i + 1` with i: i64 is `i + 1_i64`), so
// `==` and friends return Expr, not bool: compare handles with same_as or
// structural_equal.
#pragma once

#include <concepts>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "tir/ir.h"

namespace tilefuse::tir {

// A constant of `like`'s dtype with value v.
template <class T>
requires std::is_arithmetic_v<T> Expr const_like(const Expr& like, T v) {
  if constexpr (std::is_integral_v<T>) {
    if (!is_floating(like.dtype())) return make_int(like.dtype(), static_cast<int64_t>(v));
  }
  return make_const(like.dtype(), static_cast<double>(v));
}

#define TF_TIR_OPERATOR(op, kind)                                         \
  inline Expr operator op(const Expr& a, const Expr& b) {                 \
    return kind##Node::make(a, b);                                        \
  }                                                                       \
  template <class T>                                                      \
  requires std::is_arithmetic_v<T> Expr operator op(const Expr& a, T b) { \
    return kind##Node::make(a, const_like(a, b));                         \
  }                                                                       \
  template <class T>                                                      \
  requires std::is_arithmetic_v<T> Expr operator op(T a, const Expr& b) { \
    return kind##Node::make(const_like(b, a), b);                         \
  }
TF_TIR_OPERATOR(+, Add)
TF_TIR_OPERATOR(-, Sub)
TF_TIR_OPERATOR(*, Mul)
TF_TIR_OPERATOR(/, Div)
TF_TIR_OPERATOR(%, Mod)
TF_TIR_OPERATOR(==, EQ)
TF_TIR_OPERATOR(!=, NE)
TF_TIR_OPERATOR(<, LT)
TF_TIR_OPERATOR(<=, LE)
TF_TIR_OPERATOR(>, GT)
TF_TIR_OPERATOR(>=, GE)
#undef TF_TIR_OPERATOR
inline Expr operator&&(const Expr& a, const Expr& b) {
  return AndNode::make(a, b);
}
inline Expr operator||(const Expr& a, const Expr& b) {
  return OrNode::make(a, b);
}
inline Expr operator!(const Expr& a) {
  return NotNode::make(a);
}
// Integers: 0 - a. Floats: neg(a), which keeps -0.0 correct.
Expr operator-(const Expr& a);

Expr min(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);
Expr select(const Expr& cond, const Expr& t, const Expr& f);
Expr cast(DType dtype, const Expr& value);
Expr call(Intrinsic op, std::vector<Expr> args);
Expr load(const Buffer& buffer, std::vector<Expr> indices, Expr mask = {}, Expr other = {});

// A copy's destination index and value for one point of its region.
struct CopyBody {
  std::vector<Expr> dst_indices;
  Expr value;
};

class KernelBuilder {
 public:
  explicit KernelBuilder(std::string name);
  KernelBuilder(const KernelBuilder&) = delete;
  KernelBuilder& operator=(const KernelBuilder&) = delete;

  // ---- signature (params are in call order) ----
  Var scalar_param(std::string name, DType dtype = DType::I32);
  // An existing var as the next scalar param (a var buffer shapes already use).
  void scalar_param(const Var& var);
  // A read-only global input / a writable global output. Empty strides mean
  // compact row-major; alignment is of the base address in bytes (0: the
  // element size).
  Buffer input(std::string name, DType dtype, std::vector<Expr> shape,
               std::vector<Expr> strides = {}, int alignment = 0);
  Buffer output(std::string name, DType dtype, std::vector<Expr> shape,
                std::vector<Expr> strides = {}, int alignment = 0);
  Var program_id(std::string name, Expr extent);
  void set_attr(std::string key, AttrValue value);

  // ---- declarations scoped over the rest of the current block ----
  Buffer alloc(std::string name, MemScope scope, DType dtype, std::vector<Expr> shape);
  Var let(std::string name, Expr value);

  // ---- control flow: `body` runs once, building the loop / branch body ----
  void for_range(std::string name, Expr min, Expr extent, const std::function<void(Var)>& body,
                 ForKind kind = ForKind::Serial, int num_stages = 0);
  // Loops over [0, extent) (0 of extent's dtype).
  void serial(std::string name, Expr extent, const std::function<void(Var)>& body);
  void unrolled(std::string name, Expr extent, const std::function<void(Var)>& body);
  void parallel(std::string name, Expr extent, const std::function<void(Var)>& body);
  void pipelined(std::string name, Expr extent, int num_stages,
                 const std::function<void(Var)>& body);
  void if_then(Expr cond, const std::function<void()>& then_body,
               const std::function<void()>& else_body = {});
  // if_last_arrival(counter[indices], count) { body } (LastArrivalNode).
  void if_last_arrival(const Buffer& counter, std::vector<Expr> indices, Expr count,
                       const std::function<void()>& body);

  // ---- statements ----
  void store(const Buffer& buffer, std::vector<Expr> indices, Expr value, Expr mask = {});
  // dst[i, j, ...] = value({i, j, ...}) over all of dst's shape.
  void copy(const Buffer& dst, const std::function<Expr(const std::vector<Var>&)>& value,
            std::vector<std::string> var_names = {});
  // For each point of vars in [0, extents): dst[body.dst_indices] = body.value.
  void copy(const Buffer& dst, std::vector<Expr> extents,
            const std::function<CopyBody(const std::vector<Var>&)>& body,
            std::vector<std::string> var_names = {});
  void gemm(TileRef a, TileRef b, TileRef c, bool trans_a = false, bool trans_b = false);
  void fill(const Buffer& buffer, Expr value);
  void check(Expr cond, int64_t code, std::string message, std::vector<Expr> args = {});
  void barrier();
  void evaluate(Expr value);
  void emit(Stmt stmt);

  // ---- hooks (replaced by inline_hooks) ----
  // Operand `name` (dtype `dtype`) at logical indices; 0 where mask is false.
  Expr load_input(std::string name, std::vector<Expr> indices, DType dtype, Expr mask = {});
  // Writes output `name` at logical indices where mask holds.
  void store_output(std::string name, std::vector<Expr> indices, Expr value, Expr mask = {});

  // The finished kernel. The builder must not be used afterwards.
  Kernel build();

 private:
  // One open block: statements plus let/alloc markers that scope over the
  // entries after them (make_block closes it).
  using Block = std::vector<BlockEntry>;

  Block& current();
  Stmt build_block(const std::function<void()>& fill_block);
  std::vector<Var> copy_vars(size_t rank, std::vector<std::string> names);

  Kernel kernel_;
  std::vector<Block> blocks_;
  bool built_ = false;
};

}  // namespace tilefuse::tir
