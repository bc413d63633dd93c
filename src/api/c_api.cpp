// The C API (include/tilefuse/tilefuse.h) over driver::Callable: DLPack
// tensors in, status codes and a per-thread message out. Every entry point
// catches everything: no C++ exception crosses the boundary.
#include "tilefuse/tilefuse.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/memory.h"
#include "driver/callable.h"
#include "frontend/frontend.h"
#include "reference/thread_pool.h"

namespace {

using tilefuse::DType;
using tilefuse::ErrorKind;
using tilefuse::InternalError;
using tilefuse::UserError;
using tilefuse::driver::CallTensor;
using tilefuse::driver::DeviceKind;

thread_local std::string t_last_error;

// DLPack dtype codes newer than the dlpack.h Debian ships (0.6).
constexpr uint8_t kDLBoolCode = 6;           // DLPack 0.8 kDLBool
constexpr uint8_t kDLFloat8E4M3FnCode = 10;  // DLPack 1.1 kDLFloat8_e4m3fn
constexpr uint8_t kDLFloat8E5M2Code = 12;    // DLPack 1.1 kDLFloat8_e5m2

tf_status fail(tf_status status, std::string message) {
  t_last_error = std::move(message);
  return status;
}

// Runs `body`, turning every exception into a status and a message.
template <class Body>
tf_status guarded(Body body) {
  try {
    t_last_error.clear();
    return body();
  } catch (const tilefuse::driver::WorkspaceTooSmall& e) {
    return fail(TF_ERROR_WORKSPACE, e.what());
  } catch (const UserError& e) {
    switch (e.kind()) {
      case ErrorKind::kType:
        return fail(TF_ERROR_TYPE, e.what());
      case ErrorKind::kValue:
        return fail(TF_ERROR_VALUE, e.what());
      case ErrorKind::kIndex:
        return fail(TF_ERROR_INDEX, e.what());
      case ErrorKind::kUnsupported:
        return fail(TF_ERROR_UNSUPPORTED, e.what());
      case ErrorKind::kGeneric:
        break;
    }
    const std::string m = e.what();
    for (const char* oom : {"out of memory", "out of host memory", "out of device memory"})
      if (m.find(oom) != std::string::npos) return fail(TF_ERROR_OUT_OF_MEMORY, m);
    return fail(TF_ERROR_RUNTIME, m);
  } catch (const std::bad_alloc&) {
    return fail(TF_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const InternalError& e) {
    return fail(TF_ERROR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (const std::exception& e) {
    return fail(TF_ERROR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(TF_ERROR_INTERNAL, "internal error: an unknown exception");
  }
}

// The tilefuse dtype of a DLPack (code, bits) with one lane, or nullopt.
std::optional<DType> dtype_of(const DLDataType& t) {
  if (t.lanes != 1) return std::nullopt;
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 16) return DType::F16;
      if (t.bits == 32) return DType::F32;
      if (t.bits == 64) return DType::F64;
      break;
    case kDLBfloat:
      if (t.bits == 16) return DType::BF16;
      break;
    case kDLInt:
      if (t.bits == 8) return DType::I8;
      if (t.bits == 32) return DType::I32;
      if (t.bits == 64) return DType::I64;
      break;
    case kDLUInt:
      if (t.bits == 8) return DType::U8;
      break;
    case kDLBoolCode:
      if (t.bits == 8) return DType::Bool;
      break;
    case kDLFloat8E4M3FnCode:
      if (t.bits == 8) return DType::F8E4M3;
      break;
    case kDLFloat8E5M2Code:
      if (t.bits == 8) return DType::F8E5M2;
      break;
    default:
      break;
  }
  return std::nullopt;
}

// Fills *out with `t` (reusing out's shape and strides storage: a repeated
// call allocates nothing here). `role` ("input" / "output") and `name` name
// the tensor in errors (the message is only formatted when there is one:
// this runs on every call).
void fill_call_tensor(const DLTensor* t, const char* role, const std::string& name,
                      CallTensor* out) {
  auto what = [&] { return fmt::format("{} `{}`", role, name); };
  if (!t) throw UserError(ErrorKind::kValue, what() + " is NULL");
  CallTensor& c = *out;
  c.device_id = 0;
  // The device says where the data is; whether the memory really is there
  // is checked at each call (driver::placement_problem), before any access.
  switch (t->device.device_type) {
    case kDLCPU:
      if (t->device.device_id != 0)
        throw UserError(ErrorKind::kValue,
                        fmt::format("{} is a CPU tensor (DLPack kDLCPU) with device_id {}; a CPU "
                                    "tensor's device_id is 0",
                                    what(), t->device.device_id));
      c.device = DeviceKind::kCpu;
      break;
    case kDLCUDAHost:
      c.device = DeviceKind::kCpu;
      break;
    case kDLCUDA:
    case kDLCUDAManaged:
      if (t->device.device_id < 0)
        throw UserError(ErrorKind::kValue,
                        fmt::format("{} is on CUDA device {}; a device ordinal is 0 or more",
                                    what(), t->device.device_id));
      c.device = DeviceKind::kCuda;
      c.device_id = t->device.device_id;
      break;
    default:
      throw UserError(ErrorKind::kValue,
                      fmt::format("{} is on DLPack device type {}; tilefuse runs on the CPU and "
                                  "CUDA GPUs",
                                  what(), static_cast<int>(t->device.device_type)));
  }
  const std::optional<DType> dt = dtype_of(t->dtype);
  if (!dt) {
    if (t->dtype.lanes != 1)
      throw UserError(ErrorKind::kType,
                      fmt::format("{} has {} lanes per element; tilefuse takes scalars", what(),
                                  t->dtype.lanes));
    throw UserError(ErrorKind::kType,
                    fmt::format("{} has a DLPack dtype tilefuse does not take (code {}, {} bits)",
                                what(), static_cast<int>(t->dtype.code),
                                static_cast<int>(t->dtype.bits)));
  }
  c.dtype = *dt;
  if (t->ndim < 0 || t->ndim > 64)
    throw UserError(ErrorKind::kValue, fmt::format("{} has {} dims", what(), t->ndim));
  if (t->ndim > 0 && !t->shape) throw UserError(ErrorKind::kValue, what() + " has no shape");
  c.shape.assign(t->shape, t->shape + t->ndim);
  // The sizes, checked before anything multiplies them: non-negative, and
  // an element count within int64 (a shape of absurd sizes overflowed the
  // row-major strides below, undefined behaviour).
  auto shape_text = [&] {
    std::string s;
    for (const int64_t n : c.shape) s += (s.empty() ? "" : ", ") + std::to_string(n);
    return "[" + s + "]";
  };
  int64_t count = 1;
  bool count_overflows = false;
  for (int d = 0; d < t->ndim; ++d) {
    if (c.shape[d] < 0)
      throw UserError(ErrorKind::kValue,
                      fmt::format("{} has the negative size {} in dim {}", what(), c.shape[d], d));
    count_overflows = count_overflows || __builtin_mul_overflow(count, c.shape[d], &count);
  }
  const bool empty = std::find(c.shape.begin(), c.shape.end(), 0) != c.shape.end();
  if (count_overflows && !empty)
    throw UserError(ErrorKind::kValue,
                    fmt::format("{} has the shape {}, whose element count overflows int64",
                                what(), shape_text()));
  if (t->strides) {
    c.strides.assign(t->strides, t->strides + t->ndim);
  } else {
    // Row-major (tilefuse::contiguous_strides, without a new vector); a
    // size-0 dim counts as 1, so an empty tensor's strides can still overflow.
    c.strides.resize(static_cast<size_t>(t->ndim));
    int64_t step = 1;
    for (int d = t->ndim - 1; d >= 0; --d) {
      c.strides[static_cast<size_t>(d)] = step;
      if (d > 0 &&
          __builtin_mul_overflow(step, std::max<int64_t>(c.shape[static_cast<size_t>(d)], 1), &step))
        throw UserError(ErrorKind::kValue,
                        fmt::format("{} has the shape {} and NULL strides, and its row-major "
                                    "strides overflow int64",
                                    what(), shape_text()));
    }
  }
  for (int d = 0; d < t->ndim; ++d) {
    if (c.strides[d] < 0 && c.shape[d] > 1)
      throw UserError(ErrorKind::kValue,
                      fmt::format("{} has the negative stride {} in dim {}; pass a contiguous "
                                  "copy",
                                  what(), c.strides[d], d));
  }
  // The first element is at data + byte_offset: an offset that wraps that
  // sum around the address space (e.g. (uint64_t)-8, which reached 8 bytes
  // before the buffer) or that no allocation could have is refused.
  const auto base = reinterpret_cast<uintptr_t>(t->data);
  if (t->byte_offset > static_cast<uint64_t>(INT64_MAX) ||
      t->byte_offset > static_cast<uint64_t>(UINTPTR_MAX - base))
    throw UserError(ErrorKind::kValue,
                    fmt::format("{} has the byte_offset {}: data + byte_offset wraps around the "
                                "address space",
                                what(), t->byte_offset));
  c.data = static_cast<char*>(t->data) + t->byte_offset;
}

// tf_run's CallTensors, per thread: their vectors keep their storage from
// one call to the next (a tf_run may not call back into tilefuse, so one
// set per thread suffices).
thread_local std::vector<CallTensor> t_run_inputs, t_run_outputs;

}  // namespace

struct tf_program {
  std::unique_ptr<tilefuse::driver::Callable> callable;
  std::string signature;
  std::vector<std::string> param_names, output_names;

  std::vector<CallTensor> tensors(const DLTensor* const* ts, int n, bool inputs) const {
    std::vector<CallTensor> out;
    tensors_into(ts, n, inputs, &out);
    return out;
  }

  // The same into *out, reusing its elements' storage.
  void tensors_into(const DLTensor* const* ts, int n, bool inputs,
                    std::vector<CallTensor>* out) const {
    const std::vector<std::string>& names = inputs ? param_names : output_names;
    const char* what = inputs ? "input" : "output";
    if (n < 0)
      throw UserError(ErrorKind::kValue,
                      fmt::format("negative {} count {} (num_{}s)", what, n, what));
    if (static_cast<size_t>(n) != names.size())
      throw UserError(ErrorKind::kValue,
                      fmt::format("the program takes {} {}{}, got {}", names.size(), what,
                                  names.size() == 1 ? "" : "s", n));
    if (n > 0 && !ts)
      throw UserError(ErrorKind::kValue,
                      fmt::format("{}s is NULL but num_{}s is {}", what, what, n));
    out->resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
      fill_call_tensor(ts[i], inputs ? "input" : "output", names[static_cast<size_t>(i)],
                       &(*out)[static_cast<size_t>(i)]);
  }
};

namespace {

tilefuse::driver::CallableOptions callable_options(const tf_options* o) {
  tilefuse::driver::CallableOptions c;
  if (!o) return c;
  if (o->struct_size < sizeof(tf_options))
    throw UserError("tf_options.struct_size is " + std::to_string(o->struct_size) +
                    "; initialize the options with tf_options_init");
  if (o->device) c.device = o->device;
  if (o->plan) c.plan = o->plan;
  c.allow_tf32 = o->allow_tf32 != 0;
  c.tuning = o->tuning != 0;
  if (o->cache_dir) c.cache_root = o->cache_dir;
  if (o->threads < 0 || o->threads > tilefuse::reference::kMaxThreads)
    throw UserError(fmt::format("tf_options.threads must be 0 (every core) to {}, got {}",
                                tilefuse::reference::kMaxThreads, o->threads));
  c.cpu_threads = o->threads;
  return c;
}

tf_status compile_program(const std::string& source, const std::string& file,
                          const tf_options* options, tf_program** out) {
  if (!out) return fail(TF_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  tilefuse::driver::CallableOptions co;
  try {
    co = callable_options(options);
  } catch (const UserError& e) {
    return fail(TF_ERROR_INVALID_ARGUMENT, e.what());
  }
  std::unique_ptr<tilefuse::driver::Callable> callable;
  try {
    callable = std::make_unique<tilefuse::driver::Callable>(source, file, co);
  } catch (const UserError& e) {
    // A malformed program (or a bad option): the diagnostic as the CLI
    // prints it, without the trailing newline.
    std::string d = e.loc().valid() ? tilefuse::format_diagnostic(file, source, e)
                                    : file + ": error: " + e.what();
    while (!d.empty() && d.back() == '\n') d.pop_back();
    const bool option = std::string(e.what()).find("must be \"") != std::string::npos;
    return fail(option ? TF_ERROR_INVALID_ARGUMENT : TF_ERROR_COMPILE, d);
  }
  auto p = std::make_unique<tf_program>();
  // (replace: a program path need not be UTF-8; its bytes that are not
  // become U+FFFD, where the JSON writer threw)
  p->signature = callable->signature().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const tilefuse::Graph& g = callable->program().graph;
  for (tilefuse::ValueId v : g.parameters()) p->param_names.push_back(g.node(v).name);
  p->output_names = tilefuse::driver::output_names(g);
  p->callable = std::move(callable);
  *out = p.release();
  return TF_OK;
}

// Runs `body` (a call of the program), giving a run-time error that knows its
// place in the program (an index out of range names the gather's line) the
// prefix "file:line:col: " in its one-line message.
template <class Body>
void located(const tf_program& program, Body body) {
  try {
    body();
  } catch (const UserError& e) {
    if (!e.loc().valid()) throw;  // WorkspaceTooSmall among them, rethrown as itself
    throw UserError(e.kind(), fmt::format("{}:{}:{}: {}", program.callable->program().file,
                                          e.loc().line, e.loc().col, e.what()));
  }
}

char* copy_string(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (!out) throw std::bad_alloc();
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

}  // namespace

extern "C" {

void tf_options_init(tf_options* options) {
  if (!options) return;
  *options = tf_options{};
  options->struct_size = sizeof(tf_options);
  options->device = "auto";
  options->plan = "auto";
  options->allow_tf32 = 0;
  options->tuning = 1;
  options->cache_dir = nullptr;
  options->threads = 0;
}

void tf_run_options_init(tf_run_options* options) {
  if (!options) return;
  *options = tf_run_options{};
  options->struct_size = sizeof(tf_run_options);
}

tf_status tf_compile_source(const char* source, const char* name, const tf_options* options,
                            tf_program** out) {
  return guarded([&] {
    if (!source) return fail(TF_ERROR_INVALID_ARGUMENT, "source is NULL");
    const std::string file = name ? name : "<source>";
    // The program files' limit (tilefuse::LoadOptions::max_bytes), counted
    // without reading past it: a longer text was parsed whatever its size.
    const int64_t limit = tilefuse::LoadOptions{}.max_bytes;
    const size_t length = ::strnlen(source, static_cast<size_t>(limit) + 1);
    if (static_cast<int64_t>(length) > limit) {
      if (out) *out = nullptr;
      return fail(TF_ERROR_INVALID_ARGUMENT,
                  fmt::format("{}: the program text is longer than {}, the most a program may be",
                              file, tilefuse::format_bytes(limit)));
    }
    return compile_program(std::string(source, length), file, options, out);
  });
}

tf_status tf_compile_file(const char* path, const tf_options* options, tf_program** out) {
  return guarded([&] {
    if (!path) return fail(TF_ERROR_INVALID_ARGUMENT, "path is NULL");
    if (out) *out = nullptr;
    std::string text;
    try {
      text = tilefuse::read_program_file(path);
    } catch (const UserError& e) {
      return fail(TF_ERROR_INVALID_ARGUMENT, e.what());
    }
    return compile_program(text, path, options, out);
  });
}

void tf_program_free(tf_program* program) {
  delete program;  // destructors do not throw
}

const char* tf_last_error(void) {
  return t_last_error.c_str();
}

const char* tf_status_name(tf_status status) {
  switch (status) {
    case TF_OK:
      return "TF_OK";
    case TF_ERROR_INVALID_ARGUMENT:
      return "TF_ERROR_INVALID_ARGUMENT";
    case TF_ERROR_COMPILE:
      return "TF_ERROR_COMPILE";
    case TF_ERROR_TYPE:
      return "TF_ERROR_TYPE";
    case TF_ERROR_VALUE:
      return "TF_ERROR_VALUE";
    case TF_ERROR_INDEX:
      return "TF_ERROR_INDEX";
    case TF_ERROR_WORKSPACE:
      return "TF_ERROR_WORKSPACE";
    case TF_ERROR_RUNTIME:
      return "TF_ERROR_RUNTIME";
    case TF_ERROR_OUT_OF_MEMORY:
      return "TF_ERROR_OUT_OF_MEMORY";
    case TF_ERROR_INTERNAL:
      return "TF_ERROR_INTERNAL";
    case TF_ERROR_UNSUPPORTED:
      return "TF_ERROR_UNSUPPORTED";
  }
  return "TF_ERROR_UNKNOWN";
}

const char* tf_version(void) {
  return TILEFUSE_VERSION;
}

int tf_api_version(void) {
  return TILEFUSE_API_VERSION;
}

const char* tf_program_signature(const tf_program* program) {
  return program ? program->signature.c_str() : nullptr;
}

int tf_program_num_inputs(const tf_program* program) {
  return program ? static_cast<int>(program->param_names.size()) : -1;
}

int tf_program_num_outputs(const tf_program* program) {
  return program ? static_cast<int>(program->output_names.size()) : -1;
}

tf_status tf_output_shape(tf_program* program, const DLTensor* const* inputs, int num_inputs,
                          int index, int64_t* shape, int capacity, int* ndim) {
  return guarded([&] {
    if (!program) return fail(TF_ERROR_INVALID_ARGUMENT, "program is NULL");
    if (!ndim) return fail(TF_ERROR_INVALID_ARGUMENT, "ndim is NULL");
    if (capacity < 0)
      return fail(
          TF_ERROR_INVALID_ARGUMENT,
          fmt::format("capacity is negative ({}); it is how many sizes `shape` holds", capacity));
    if (capacity > 0 && !shape)
      return fail(TF_ERROR_INVALID_ARGUMENT,
                  fmt::format("shape is NULL but capacity is {}", capacity));
    if (index < 0 || static_cast<size_t>(index) >= program->output_names.size())
      return fail(TF_ERROR_INVALID_ARGUMENT, fmt::format("no output {} (index; the program has {})",
                                                         index, program->output_names.size()));
    std::vector<tilefuse::Shape> shapes;
    located(*program, [&] {
      shapes = program->callable->output_shapes(program->tensors(inputs, num_inputs, true));
    });
    const tilefuse::Shape& s = shapes[static_cast<size_t>(index)];
    *ndim = static_cast<int>(s.size());
    for (int d = 0; d < *ndim && d < capacity; ++d) shape[d] = s[static_cast<size_t>(d)];
    return TF_OK;
  });
}

tf_status tf_run(tf_program* program, const DLTensor* const* inputs, int num_inputs,
                 const DLTensor* const* outputs, int num_outputs, const tf_run_options* options,
                 size_t* workspace_needed) {
  return guarded([&] {
    if (workspace_needed) *workspace_needed = 0;
    if (!program) return fail(TF_ERROR_INVALID_ARGUMENT, "program is NULL");
    tilefuse::driver::CallContext ctx;
    if (options) {
      if (options->struct_size < sizeof(tf_run_options))
        return fail(TF_ERROR_INVALID_ARGUMENT,
                    "tf_run_options.struct_size is " + std::to_string(options->struct_size) +
                        "; initialize the options with tf_run_options_init");
      ctx.stream = options->stream;
      ctx.workspace = options->workspace;
      ctx.workspace_bytes = options->workspace_bytes;
      ctx.sync = options->sync != 0;
    }
    try {
      program->tensors_into(inputs, num_inputs, true, &t_run_inputs);
      program->tensors_into(outputs, num_outputs, false, &t_run_outputs);
      located(*program, [&] { program->callable->call(t_run_inputs, t_run_outputs, ctx); });
    } catch (const tilefuse::driver::WorkspaceTooSmall& e) {
      if (workspace_needed) *workspace_needed = e.needed();
      throw;
    }
    return TF_OK;
  });
}

tf_status tf_run_managed(tf_program* program, DLManagedTensor* const* inputs, int num_inputs,
                         DLManagedTensor* const* outputs, int num_outputs,
                         const tf_run_options* options, size_t* workspace_needed) {
  return guarded([&] {
    if (num_inputs < 0 || num_outputs < 0)
      return fail(TF_ERROR_INVALID_ARGUMENT,
                  fmt::format("negative tensor count (num_inputs {}, num_outputs {})",
                              num_inputs, num_outputs));
    if (!program) return fail(TF_ERROR_INVALID_ARGUMENT, "program is NULL");
    // The counts are checked before any buffer is sized by them.
    const size_t want_in = program->param_names.size(), want_out = program->output_names.size();
    if (static_cast<size_t>(num_inputs) != want_in || static_cast<size_t>(num_outputs) != want_out)
      return fail(TF_ERROR_VALUE, fmt::format("the program takes {} input{} and {} output{}, got "
                                              "{} and {}",
                                              want_in, want_in == 1 ? "" : "s", want_out,
                                              want_out == 1 ? "" : "s", num_inputs, num_outputs));
    if ((num_inputs > 0 && !inputs) || (num_outputs > 0 && !outputs))
      return fail(TF_ERROR_INVALID_ARGUMENT, "inputs or outputs is NULL");
    // The DLTensor pointers on the stack for the usual few tensors.
    constexpr int kSmall = 16;
    const DLTensor* small[2 * kSmall];
    std::vector<const DLTensor*> large;
    const DLTensor** in = small;
    const DLTensor** out = small + kSmall;
    if (num_inputs > kSmall || num_outputs > kSmall) {
      large.resize(static_cast<size_t>(num_inputs) + static_cast<size_t>(num_outputs) + 1);
      in = large.data();
      out = large.data() + num_inputs;
    }
    for (int i = 0; i < num_inputs; ++i) in[i] = inputs[i] ? &inputs[i]->dl_tensor : nullptr;
    for (int i = 0; i < num_outputs; ++i)
      out[i] = outputs[i] ? &outputs[i]->dl_tensor : nullptr;
    return tf_run(program, in, num_inputs, out, num_outputs, options, workspace_needed);
  });
}

tf_status tf_workspace_size(tf_program* program, const DLTensor* const* inputs, int num_inputs,
                            size_t* bytes) {
  return guarded([&] {
    if (!program) return fail(TF_ERROR_INVALID_ARGUMENT, "program is NULL");
    if (!bytes) return fail(TF_ERROR_INVALID_ARGUMENT, "bytes is NULL");
    located(*program, [&] {
      *bytes = program->callable->workspace_bytes(program->tensors(inputs, num_inputs, true));
    });
    return TF_OK;
  });
}

tf_status tf_synchronize(tf_program* program) {
  return guarded([&] {
    if (!program) return fail(TF_ERROR_INVALID_ARGUMENT, "program is NULL");
    located(*program, [&] { program->callable->synchronize(); });
    return TF_OK;
  });
}

tf_status tf_explain(tf_program* program, const DLTensor* const* inputs, int num_inputs,
                     const char* target, char** json) {
  return guarded([&] {
    if (!program) return fail(TF_ERROR_INVALID_ARGUMENT, "program is NULL");
    if (!json) return fail(TF_ERROR_INVALID_ARGUMENT, "json is NULL");
    *json = nullptr;
    // Without inputs the count is not read, but a negative one is still a mistake.
    if (num_inputs < 0)
      throw UserError(ErrorKind::kValue,
                      fmt::format("negative input count {} (num_inputs)", num_inputs));
    std::vector<CallTensor> ts;
    if (inputs) ts = program->tensors(inputs, num_inputs, true);
    nlohmann::json account;
    located(*program, [&] {
      account = program->callable->explain(inputs ? &ts : nullptr, target ? target : "");
    });
    *json = copy_string(account.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return TF_OK;
  });
}

tf_status tf_tune(tf_program* program, const char* const* sizes, int num_sizes, int retune,
                  char** report) {
  return guarded([&] {
    if (report) *report = nullptr;
    if (!program) return fail(TF_ERROR_INVALID_ARGUMENT, "program is NULL");
    if (num_sizes < 0)
      return fail(TF_ERROR_INVALID_ARGUMENT,
                  fmt::format("num_sizes is negative ({}); it is how many bindings `sizes` holds",
                              num_sizes));
    if (num_sizes > 0 && !sizes)
      return fail(TF_ERROR_INVALID_ARGUMENT,
                  fmt::format("sizes is NULL but num_sizes is {}", num_sizes));
    std::vector<tilefuse::SymbolValues> bindings;
    for (int i = 0; i < num_sizes; ++i) {
      if (!sizes[i]) return fail(TF_ERROR_INVALID_ARGUMENT, fmt::format("sizes[{}] is NULL", i));
      tilefuse::SymbolValues v;
      const std::string text = sizes[i];
      size_t start = 0;
      while (start < text.size()) {
        const size_t end = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, end - start);
        const size_t eq = item.find('=');
        char* tail = nullptr;
        errno = 0;
        const long long size =
            eq == std::string::npos ? -1 : std::strtoll(item.c_str() + eq + 1, &tail, 10);
        if (eq == std::string::npos || eq == 0 || eq + 1 == item.size() || !tail ||
            *tail != '\0' || errno == ERANGE || size < 0)
          return fail(TF_ERROR_INVALID_ARGUMENT,
                      "a size binding must look like \"T=4096,M=16\" (sizes non-negative "
                      "integers), got \"" + text + "\"");
        if (!v.emplace(item.substr(0, eq), size).second)
          return fail(TF_ERROR_INVALID_ARGUMENT, "the size binding \"" + text + "\" gives `" +
                                                     item.substr(0, eq) + "` twice");
        start = end + 1;
      }
      bindings.push_back(std::move(v));
    }
    const std::vector<std::string> lines = program->callable->tune(bindings, retune != 0);
    std::string text;
    for (const std::string& l : lines) text += l + "\n";
    if (report) *report = copy_string(text);
    return TF_OK;
  });
}

int tf_program_compile_count(const tf_program* program) {
  return program ? program->callable->compile_count() : -1;
}

void tf_free_string(char* s) {
  std::free(s);
}

}  // extern "C"
