#include "tir/builder.h"

namespace tilefuse::tir {

Expr operator-(const Expr& a) {
  if (is_floating(a.dtype())) return CallNode::make(Intrinsic::Neg, {a});
  return SubNode::make(make_int(a.dtype(), 0), a);
}

Expr min(const Expr& a, const Expr& b) {
  return MinNode::make(a, b);
}
Expr max(const Expr& a, const Expr& b) {
  return MaxNode::make(a, b);
}
Expr select(const Expr& cond, const Expr& t, const Expr& f) {
  return SelectNode::make(cond, t, f);
}
Expr cast(DType dtype, const Expr& value) {
  return CastNode::make(dtype, value);
}
Expr call(Intrinsic op, std::vector<Expr> args) {
  return CallNode::make(op, std::move(args));
}
Expr load(const Buffer& buffer, std::vector<Expr> indices, Expr mask, Expr other) {
  return LoadNode::make(buffer, std::move(indices), std::move(mask), std::move(other));
}

KernelBuilder::KernelBuilder(std::string name) {
  kernel_.name = std::move(name);
  blocks_.emplace_back();
}

Var KernelBuilder::scalar_param(std::string name, DType dtype) {
  Var v(std::move(name), dtype);
  kernel_.params.push_back({v, {}});
  return v;
}

void KernelBuilder::scalar_param(const Var& var) {
  kernel_.params.push_back({var, {}});
}

Buffer KernelBuilder::input(std::string name, DType dtype, std::vector<Expr> shape,
                            std::vector<Expr> strides, int alignment) {
  Buffer b = BufferNode::make(std::move(name), dtype, MemScope::Global, std::move(shape),
                              std::move(strides), /*read_only=*/true, alignment);
  kernel_.params.push_back({{}, b});
  return b;
}

Buffer KernelBuilder::output(std::string name, DType dtype, std::vector<Expr> shape,
                             std::vector<Expr> strides, int alignment) {
  Buffer b = BufferNode::make(std::move(name), dtype, MemScope::Global, std::move(shape),
                              std::move(strides), /*read_only=*/false, alignment);
  kernel_.params.push_back({{}, b});
  return b;
}

Var KernelBuilder::program_id(std::string name, Expr extent) {
  Var v(std::move(name), extent.dtype());
  kernel_.grid.push_back({v, std::move(extent)});
  return v;
}

void KernelBuilder::set_attr(std::string key, AttrValue value) {
  kernel_.attrs[std::move(key)] = std::move(value);
}

KernelBuilder::Block& KernelBuilder::current() {
  TF_CHECK(!built_ && !blocks_.empty(), "KernelBuilder used after build()");
  return blocks_.back();
}

Buffer KernelBuilder::alloc(std::string name, MemScope scope, DType dtype,
                            std::vector<Expr> shape) {
  Buffer b = BufferNode::make(std::move(name), dtype, scope, std::move(shape));
  current().push_back({{}, {}, {}, b, {}});
  return b;
}

Var KernelBuilder::let(std::string name, Expr value) {
  Var v(std::move(name), value.dtype());
  current().push_back({{}, v, std::move(value), {}, {}});
  return v;
}

Stmt KernelBuilder::build_block(const std::function<void()>& fill_block) {
  current();  // checks the builder is still open
  blocks_.emplace_back();
  fill_block();
  Block block = std::move(blocks_.back());
  blocks_.pop_back();
  return make_block(block);
}

void KernelBuilder::for_range(std::string name, Expr min, Expr extent,
                              const std::function<void(Var)>& body, ForKind kind, int num_stages) {
  Var v(std::move(name), min.dtype());
  Stmt s = build_block([&] { body(v); });
  emit(ForNode::make(v, std::move(min), std::move(extent), kind, num_stages, std::move(s)));
}

void KernelBuilder::serial(std::string name, Expr extent, const std::function<void(Var)>& body) {
  Expr zero = make_int(extent.dtype(), 0);
  for_range(std::move(name), zero, std::move(extent), body, ForKind::Serial);
}

void KernelBuilder::unrolled(std::string name, Expr extent, const std::function<void(Var)>& body) {
  Expr zero = make_int(extent.dtype(), 0);
  for_range(std::move(name), zero, std::move(extent), body, ForKind::Unrolled);
}

void KernelBuilder::parallel(std::string name, Expr extent, const std::function<void(Var)>& body) {
  Expr zero = make_int(extent.dtype(), 0);
  for_range(std::move(name), zero, std::move(extent), body, ForKind::Parallel);
}

void KernelBuilder::pipelined(std::string name, Expr extent, int num_stages,
                              const std::function<void(Var)>& body) {
  Expr zero = make_int(extent.dtype(), 0);
  for_range(std::move(name), zero, std::move(extent), body, ForKind::Pipelined, num_stages);
}

void KernelBuilder::if_then(Expr cond, const std::function<void()>& then_body,
                            const std::function<void()>& else_body) {
  Stmt t = build_block(then_body);
  Stmt e = else_body ? build_block(else_body) : Stmt();
  emit(IfThenElseNode::make(std::move(cond), std::move(t), std::move(e)));
}

void KernelBuilder::if_last_arrival(const Buffer& counter, std::vector<Expr> indices, Expr count,
                                    const std::function<void()>& body) {
  Stmt s = build_block(body);
  emit(LastArrivalNode::make(counter, std::move(indices), std::move(count), std::move(s)));
}

void KernelBuilder::store(const Buffer& buffer, std::vector<Expr> indices, Expr value, Expr mask) {
  emit(StoreNode::make(buffer, std::move(indices), std::move(value), std::move(mask)));
}

std::vector<Var> KernelBuilder::copy_vars(size_t rank, std::vector<std::string> names) {
  if (names.empty()) {
    if (rank == 1) names = {"i"};
    if (rank == 2) names = {"i", "j"};
    for (size_t d = names.size(); d < rank; ++d) {
      std::string name = "i";  // (not "i" + ...: GCC 12 warns falsely, -Wrestrict)
      name += std::to_string(d);
      names.push_back(std::move(name));
    }
  }
  TF_CHECK(names.size() == rank, "copy: one var name per dimension");
  std::vector<Var> vars;
  for (std::string& n : names) vars.emplace_back(std::move(n), DType::I32);
  return vars;
}

void KernelBuilder::copy(const Buffer& dst,
                         const std::function<Expr(const std::vector<Var>&)>& value,
                         std::vector<std::string> var_names) {
  copy(
      dst, dst->shape,
      [&](const std::vector<Var>& vars) {
        return CopyBody{std::vector<Expr>(vars.begin(), vars.end()), value(vars)};
      },
      std::move(var_names));
}

void KernelBuilder::copy(const Buffer& dst, std::vector<Expr> extents,
                         const std::function<CopyBody(const std::vector<Var>&)>& body,
                         std::vector<std::string> var_names) {
  std::vector<Var> vars = copy_vars(extents.size(), std::move(var_names));
  CopyBody b = body(vars);
  emit(CopyNode::make(std::move(vars), std::move(extents), dst, std::move(b.dst_indices),
                      std::move(b.value)));
}

void KernelBuilder::gemm(TileRef a, TileRef b, TileRef c, bool trans_a, bool trans_b) {
  emit(GemmNode::make(std::move(a), std::move(b), std::move(c), trans_a, trans_b));
}

void KernelBuilder::fill(const Buffer& buffer, Expr value) {
  emit(FillNode::make(buffer, std::move(value)));
}

void KernelBuilder::check(Expr cond, int64_t code, std::string message, std::vector<Expr> args) {
  emit(CheckNode::make(std::move(cond), code, std::move(message), std::move(args)));
}

void KernelBuilder::barrier() {
  emit(BarrierNode::make());
}

void KernelBuilder::evaluate(Expr value) {
  emit(EvaluateNode::make(std::move(value)));
}

void KernelBuilder::emit(Stmt stmt) {
  current().push_back({std::move(stmt), {}, {}, {}});
}

Expr KernelBuilder::load_input(std::string name, std::vector<Expr> indices, DType dtype,
                               Expr mask) {
  return HookLoadNode::make(dtype, std::move(name), std::move(indices), std::move(mask));
}

void KernelBuilder::store_output(std::string name, std::vector<Expr> indices, Expr value,
                                 Expr mask) {
  emit(HookStoreNode::make(std::move(name), std::move(indices), std::move(value), std::move(mask)));
}

Kernel KernelBuilder::build() {
  TF_CHECK(blocks_.size() == 1, "KernelBuilder::build() inside an open block");
  current();
  kernel_.body = make_block(blocks_.back());
  blocks_.clear();
  built_ = true;
  return std::move(kernel_);
}

}  // namespace tilefuse::tir
