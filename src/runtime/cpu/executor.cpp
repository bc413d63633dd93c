// The CPU executor's entry point: binds the arguments, compiles the kernel
// (eval_expr.cpp, eval_stmt.cpp) and runs its grid on a thread pool.
#include "runtime/cpu/executor.h"

#include <atomic>
#include <exception>
#include <limits>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

#include "core/error.h"
#include "reference/thread_pool.h"
#include "runtime/cpu/eval.h"

namespace tilefuse::runtime {

namespace cpu {

std::string format_check_message(const std::string& message,
                                 const std::vector<std::string>& values) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < message.size(); ++i) {
    if (message.compare(i, 2, "{}") == 0 && next < values.size()) {
      out += values[next++];
      ++i;
    } else {
      out += message[i];
    }
  }
  return out;
}

std::string fmt_double(double v) {
  return fmt::format("{}", v);
}

}  // namespace cpu

namespace {

using cpu::BufferView;
using cpu::Frame;
using cpu::Lane;

std::string shape_text(const std::vector<int64_t>& s) {
  return shape_to_string(s);
}

// Binds scalar `var` to its argument in the host frame.
void bind_scalar(const tir::Var& var, const KernelArg& arg, int slot, Frame& frame) {
  const DType dt = var.dtype();
  Lane v;
  if (is_floating(dt)) {
    if (const double* d = std::get_if<double>(&arg.value))
      v.f = cpu::round_float(dt, *d);
    else if (const int64_t* i = std::get_if<int64_t>(&arg.value))
      v.f = cpu::round_float(dt, static_cast<double>(*i));
    else
      throw UserError("argument `" + arg.name + "`: expected a " + std::string(dtype_name(dt)) +
                      " scalar, got a tensor");
  } else {
    const int64_t* i = std::get_if<int64_t>(&arg.value);
    if (!i)
      throw UserError("argument `" + arg.name + "`: expected an integer (" +
                      std::string(dtype_name(dt)) + ") scalar");
    if (cpu::wrap_int(dt, *i) != *i)
      throw UserError("argument `" + arg.name + "`: value " + std::to_string(*i) +
                      " does not fit " + std::string(dtype_name(dt)));
    v.i = *i;
  }
  frame.lanes(slot)[0] = v;
  frame.uniform[slot] = 1;
}

// Checks `t` against the global buffer `b` (shape and strides evaluated in
// the host frame) and makes its view.
BufferView bind_tensor(const tir::Buffer& b, const KernelArg& arg, cpu::SlotMap& slots,
                       Frame& frame) {
  const Tensor* t = std::get_if<Tensor>(&arg.value);
  const std::string& name = b->name;
  if (!t || !t->defined())
    throw UserError("argument `" + name + "`: expected a tensor for a global buffer");
  if (t->dtype() != b.dtype())
    throw UserError("argument `" + name + "`: dtype " + std::string(dtype_name(t->dtype())) +
                    ", the kernel expects " + std::string(dtype_name(b.dtype())));
  if (t->dim() != b.rank())
    throw UserError("argument `" + name + "`: rank " + std::to_string(t->dim()) +
                    ", the kernel expects " + std::to_string(b.rank()));
  if (b.rank() > cpu::kMaxRank) throw UserError("argument `" + name + "`: rank above 8");
  std::vector<int64_t> shape, strides;
  for (const tir::Expr& e : b->shape) shape.push_back(cpu::compile_expr(e, slots)->eval1(frame).i);
  if (shape != t->shape())
    throw UserError("argument `" + name + "`: shape " + shape_text(t->shape()) +
                    ", the kernel expects " + shape_text(shape));
  if (b->strides.empty()) {
    strides = contiguous_strides(shape);
  } else {
    for (const tir::Expr& e : b->strides)
      strides.push_back(cpu::compile_expr(e, slots)->eval1(frame).i);
  }
  // Strides matter only where they move: dims of size > 1 of a non-empty
  // tensor.
  const bool empty = t->numel() == 0;
  for (int d = 0; d < b.rank(); ++d) {
    if (!empty && shape[d] > 1 && strides[d] != t->strides()[d])
      throw UserError("argument `" + name + "`: strides " + shape_text(t->strides()) +
                      ", the kernel expects " + shape_text(strides));
  }
  BufferView v;
  const int64_t es = dtype_size(t->dtype());
  v.base = t->data_ptr();
  v.dtype = t->dtype();
  v.rank = b.rank();
  v.name = &b->name;
  for (int d = 0; d < v.rank; ++d) {
    v.shape[d] = shape[d];
    v.strides[d] = t->strides()[d];
  }
  // The bounds check: the whole storage, seen from the view's first element.
  v.lo = -t->offset();
  v.hi = static_cast<int64_t>(t->storage()->nbytes()) / es - t->offset();
  return v;
}

}  // namespace

void execute(const tir::Kernel& kernel, const std::vector<KernelArg>& args,
             const ExecOptions& options) {
  std::unordered_map<std::string, const KernelArg*> by_name;
  for (const KernelArg& a : args) {
    if (!by_name.emplace(a.name, &a).second)
      throw UserError("argument `" + a.name + "` given twice");
  }
  for (const auto& [name, arg] : by_name) {
    bool known = false;
    for (const tir::KernelParam& p : kernel.params) known = known || p.name() == name;
    if (!known) throw UserError("kernel `" + kernel.name + "` has no parameter `" + name + "`");
  }

  // Scalars first: buffer shapes are expressions over them.
  cpu::SlotMap slots;
  for (const tir::KernelParam& p : kernel.params) {
    if (p.is_buffer())
      slots.buffer_slot(p.buffer);
    else
      slots.var_slot(p.var);
  }
  for (const tir::GridDim& g : kernel.grid) slots.var_slot(g.var);
  Frame host = slots.make_frame();
  for (const tir::KernelParam& p : kernel.params) {
    auto it = by_name.find(p.name());
    if (it == by_name.end())
      throw UserError("kernel `" + kernel.name + "`: no argument for parameter `" + p.name() + "`");
    if (!p.is_buffer()) bind_scalar(p.var, *it->second, slots.vars.at(p.var.get()), host);
  }
  for (const tir::KernelParam& p : kernel.params) {
    if (p.is_buffer())
      host.buffers[slots.buffers.at(p.buffer.get())] =
          bind_tensor(p.buffer, *by_name.at(p.name()), slots, host);
  }

  std::vector<int64_t> extents;
  int64_t total = 1;
  for (const tir::GridDim& g : kernel.grid) {
    extents.push_back(std::max<int64_t>(0, cpu::compile_expr(g.extent, slots)->eval1(host).i));
    total *= extents.back();
  }
  const cpu::StmtPtr body = cpu::compile_stmt(kernel.body, slots);
  if (total == 0) return;

  std::vector<int> grid_slots;
  for (const tir::GridDim& g : kernel.grid) grid_slots.push_back(slots.vars.at(g.var.get()));

  // The lowest failing instance's error (Frame::first_failed).
  std::atomic<int64_t> first_failed{std::numeric_limits<int64_t>::max()};
  std::mutex error_mu;
  std::exception_ptr error;
  int64_t error_instance = std::numeric_limits<int64_t>::max();
  reference::ThreadPool pool(options.num_threads);
  // Frames (with their alloc memory) are reused across the chunks a thread
  // claims: a chunk may be a single instance, and fresh shared / fragment
  // buffers for each would page-fault their memory in every time.
  std::mutex frames_mu;
  std::vector<std::unique_ptr<Frame>> free_frames;
  pool.parallel_for(total, 1, [&](int64_t begin, int64_t end) {
    std::unique_ptr<Frame> owned;
    {
      std::lock_guard<std::mutex> lock(frames_mu);
      if (!free_frames.empty()) {
        owned = std::move(free_frames.back());
        free_frames.pop_back();
      }
    }
    if (!owned) owned = std::make_unique<Frame>(slots.make_frame());
    struct GiveBack {
      std::mutex& mu;
      std::vector<std::unique_ptr<Frame>>& frames;
      std::unique_ptr<Frame>& frame;
      ~GiveBack() {
        std::lock_guard<std::mutex> lock(mu);
        frames.push_back(std::move(frame));
      }
    } give_back{frames_mu, free_frames, owned};
    // The frame holds the scalar params and global views; allocs and loop
    // vars are added as the body runs.
    Frame& f = *owned;
    std::copy(host.var_lanes.begin(), host.var_lanes.end(), f.var_lanes.begin());
    std::copy(host.uniform.begin(), host.uniform.end(), f.uniform.begin());
    std::copy(host.affine.begin(), host.affine.end(), f.affine.begin());
    std::copy(host.buffers.begin(), host.buffers.end(), f.buffers.begin());
    f.first_failed = &first_failed;
    for (int64_t id = begin; id < end; ++id) {
      if (id > first_failed.load(std::memory_order_relaxed)) return;
      f.instance = id;
      int64_t rest = id;
      for (size_t d = extents.size(); d-- > 0;) {
        f.set_uniform_int(grid_slots[d], rest % extents[d]);
        rest /= extents[d];
      }
      try {
        body->run(f, 1, nullptr);
      } catch (const cpu::Stopped&) {
        return;
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (id < error_instance) {
          error = std::current_exception();
          error_instance = id;
          first_failed.store(id);
        }
        return;
      }
    }
  });
  if (error) std::rethrow_exception(error);
}

}  // namespace tilefuse::runtime
