// A program callable on the caller's tensors (see callable.h).
#include "driver/callable.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <map>
#include <set>

#include "core/error.h"
#include "driver/compile.h"
#include "driver/cuda_program.h"
#include "driver/execute.h"
#include "driver/explain.h"
#include "driver/specialize.h"
#include "driver/tune.h"
#include "reference/inputs.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/loader.h"
#include "schedule/schedule.h"

namespace tilefuse::driver {
namespace {

using json = nlohmann::json;

std::string device_name(DeviceKind kind, int id) {
  return kind == DeviceKind::kCpu ? std::string("cpu") : fmt::format("cuda:{}", id);
}

json dim_json(const Graph& g, const Node& n, size_t d) {
  if (n.symbol(d) == kFixedDim) return n.shape[d];
  return g.symbols()[n.symbol(d)].name;
}

json shape_json(const Graph& g, const Node& n) {
  json s = json::array();
  for (size_t d = 0; d < n.shape.size(); ++d) s.push_back(dim_json(g, n, d));
  return s;
}

json bound_json(const Graph& g, int64_t value, SymbolId s, bool negated) {
  if (s == kFixedDim) return value;
  return (negated ? "-" : "") + g.symbols()[s].name;
}


// The CUDA target of a device, or a UserError for one older than sm_80.
tir::Target target_of(const cuda::Device& dev) {
  std::optional<tir::Target> t = tir::Target::parse(dev.arch());
  if (!t)
    throw UserError(
        fmt::format("the GPU {} is {}; tilefuse needs sm_80 or newer", dev.name(), dev.arch()));
  return *t;
}

}  // namespace

WorkspaceTooSmall::WorkspaceTooSmall(std::size_t needed)
    : UserError(ErrorKind::kValue,
                fmt::format("the call needs a workspace of {} bytes", needed)),
      needed_(needed) {}

std::vector<std::string> output_names(const Graph& g) {
  // Each output's own name (its value's, else out<i>); a name taken by an
  // earlier output gets the first free suffix _1, _2, ..., free of every
  // output's own name too (`return z, z, z_1` gives z, z_2, z_1: the files
  // of --save-output are one an output). A generated out<i> never takes a
  // name the program gave an output: `out0 = x @ y; return x @ y * 2,
  // out0` gives out0_1, out0 (the user's out0 is out0.npy).
  std::vector<std::string> base;
  std::vector<bool> generated;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    std::string name = g.node(g.outputs()[i]).name;
    generated.push_back(name.empty());
    base.push_back(name.empty() ? fmt::format("out{}", i) : name);
  }
  std::set<std::string> own(base.begin(), base.end()), given, used;
  for (size_t i = 0; i < base.size(); ++i)
    if (!generated[i]) given.insert(base[i]);
  // The next suffix to try for each base: a suffix passed over once stays
  // taken (`used` only grows), so the search resumes there rather than at
  // _1 (`return h, h, ..., h` with n outputs was n^2 / 2 set lookups:
  // 20,000 outputs took 20 s).
  std::map<std::string, int64_t> next_suffix;
  std::vector<std::string> names;
  for (size_t i = 0; i < base.size(); ++i) {
    const std::string& b = base[i];
    std::string name = b;
    int64_t& k = next_suffix[b];
    if (used.count(name) || (generated[i] && given.count(name))) {
      do {
        name = fmt::format("{}_{}", b, ++k);
      } while (used.count(name) || own.count(name) || (generated[i] && given.count(name)));
    }
    used.insert(name);
    names.push_back(name);
  }
  return names;
}

// One compiled program and, on a GPU, its loaded kernels.
struct Callable::Entry {
  std::unique_ptr<CompiledProgram> compiled;
  std::unique_ptr<CudaProgram> cuda;
  int device_id = -1;  // -1: the CPU
};

struct Callable::Impl {
  std::mutex mutex;
  // Compiled programs by what their kernels are (target, specialization,
  // plan, every step's config), and the entry each call key (device,
  // specialization, size buckets) resolved to.
  std::map<std::string, std::unique_ptr<Entry>> entries;
  std::map<std::string, Entry*> by_call;
  std::set<int> devices;  // CUDA devices calls ran on
  // A call's byte spans (byte_span) of its inputs and outputs, computed
  // once a call (under `mutex`; kept for their storage).
  std::vector<std::pair<uint64_t, uint64_t>> input_spans, output_spans;
  int compiles = 0;
  // Which fixed-program strides calls pass at run time (specialize.h).
  StridePolicy stride_policy;
  std::vector<std::string> output_names;
  // The last call's signature (every input's and output's dtype, device,
  // shape, strides and alignment) and what it resolved to: a call with the
  // same signature skips the checks and the specialization (they depend on
  // nothing else), only the addresses change.
  std::vector<int64_t> last_signature;
  Binding last_binding;
  Entry* last_entry = nullptr;
  DeviceKind last_kind = DeviceKind::kCpu;
  int last_device = 0;
  cuda::Device* last_cuda = nullptr;       // the last call's device (CUDA)
  std::size_t last_workspace_needed = 0;   // its entry's workspace at last_binding
  // Storage a repeated call reuses, so that it allocates nothing: this
  // call's signature, and the DeviceCall handed to the launch.
  std::vector<int64_t> signature;
  DeviceCall device_call;
  // The loaded programs by device, polled for a failed check at each call.
  std::vector<std::pair<int, CudaProgram*>> loaded;
};

namespace {

// The call signature of the fast path (see Impl::last_signature).
void signature_of(const std::vector<CallTensor>& ts, std::vector<int64_t>* out) {
  for (const CallTensor& t : ts) {
    const auto address = reinterpret_cast<uint64_t>(t.data);
    int align = 1;
    while (align < 16 && address % static_cast<uint64_t>(2 * align) == 0) align *= 2;
    out->push_back(static_cast<int64_t>(t.dtype) | (static_cast<int64_t>(t.device) << 8) |
                   (static_cast<int64_t>(t.device_id) << 16) | (int64_t{align} << 40) |
                   (static_cast<int64_t>(t.shape.size()) << 48));
    out->insert(out->end(), t.shape.begin(), t.shape.end());
    out->insert(out->end(), t.strides.begin(), t.strides.end());
  }
}

}  // namespace

Callable::Callable(std::string source, std::string file, CallableOptions options)
    : program_(parse_program(source, file)),
      options_(std::move(options)),
      impl_(std::make_unique<Impl>()) {
  impl_->output_names = output_names(program_.graph);
  if (options_.device != "auto" && options_.device != "cpu" && options_.device != "cuda")
    throw UserError("device must be \"auto\", \"cpu\" or \"cuda\", not \"" + options_.device + "\"");
  if (options_.plan != "auto" && options_.plan != "fused" && options_.plan != "unfused")
    throw UserError("plan must be \"auto\", \"fused\" or \"unfused\", not \"" + options_.plan +
                    "\"");
  if (options_.cpu_threads < 0) throw UserError("threads must be >= 0");
}

Callable::~Callable() {
  // Each loaded program waits for its own last launch before it frees
  // anything (~CudaProgram): no device-wide synchronization, which would
  // break a CUDA graph capture running on another stream. The caller's
  // current context is left as it was.
  cuda::CurrentContextGuard restore;
  impl_.reset();
}

json Callable::signature() const {
  const Graph& g = program_.graph;
  json sig;
  sig["name"] = program_.name;
  sig["file"] = program_.file;
  json symbols = json::array();
  for (const Symbol& s : g.symbols()) symbols.push_back(s.name);
  sig["symbols"] = symbols;
  json params = json::array();
  for (ValueId p : g.parameters()) {
    const Node& n = g.node(p);
    json j = {{"name", n.name}, {"dtype", dtype_name(n.dtype)}, {"shape", shape_json(g, n)}};
    if (n.range)
      j["range"] = {bound_json(g, n.range->lo, n.range->lo_symbol, n.range->lo_negated),
                    bound_json(g, n.range->hi, n.range->hi_symbol, n.range->hi_negated)};
    params.push_back(j);
  }
  sig["parameters"] = params;
  json outs = json::array();
  const std::vector<std::string> names = output_names(g);
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const Node& n = g.node(g.outputs()[i]);
    outs.push_back({{"name", names[i]}, {"dtype", dtype_name(n.dtype)}, {"shape", shape_json(g, n)}});
  }
  sig["outputs"] = outs;
  return sig;
}

namespace {

// [first byte, one past the last byte] a tensor's elements span.
std::pair<uint64_t, uint64_t> byte_span(const CallTensor& t) {
  const auto base = reinterpret_cast<uint64_t>(t.data);
  if (shape_numel(t.shape) == 0) return {base, base};
  uint64_t extent = 1;
  for (size_t d = 0; d < t.shape.size(); ++d)
    if (t.shape[d] > 1) extent += static_cast<uint64_t>((t.shape[d] - 1) * t.strides[d]);
  return {base, base + extent * dtype_size(t.dtype)};
}

// The checks of a tensor's layout that need only its shape and strides (run
// when a call's signature changes): its elements' byte offsets, from the
// first to the farthest, fit in int64 (a stride whose reach overflows would
// wrap every offset computed from it). `what` names it ("input `x`").
void check_layout(const CallTensor& t, const std::string& what) {
  int64_t reach = 0;  // elements from the first to the farthest
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (t.shape[d] == 0) return;  // no elements: nothing is addressed
    if (t.shape[d] == 1) continue;
    const int64_t st = t.strides[d] < 0 ? -t.strides[d] : t.strides[d];
    int64_t term = 0;
    if (__builtin_mul_overflow(t.shape[d] - 1, st, &term) ||
        __builtin_add_overflow(reach, term, &reach))
      reach = INT64_MAX;
    if (reach == INT64_MAX) break;
  }
  int64_t bytes = 0;
  if (reach == INT64_MAX || __builtin_add_overflow(reach, 1, &bytes) ||
      __builtin_mul_overflow(bytes, static_cast<int64_t>(dtype_size(t.dtype)), &bytes))
    throw UserError(ErrorKind::kValue,
                    fmt::format("{} (shape {}, strides {}) reaches past 2^63 bytes: its strides "
                                "cannot address real memory",
                                what, shape_to_string(t.shape), fmt::join(t.strides, ", ")));
}

// Whether a byte span runs past the end of the address space from where it
// starts (the tensor's layout passed check_layout: under 2^63 bytes, so the
// end wraps at most once).
bool wraps(const std::pair<uint64_t, uint64_t>& span) { return span.second < span.first; }

// The check of a tensor's data pointer (every call: the pointer is not in
// the signature): a tensor with elements has memory, and its bytes do not
// wrap around the address space.
void check_data(const CallTensor& t, const std::string& what) {
  if (t.data == nullptr && shape_numel(t.shape) != 0)
    throw UserError(ErrorKind::kValue, fmt::format("{} has {} elements and NULL data", what,
                                                   shape_numel(t.shape)));
  if (wraps(byte_span(t)))
    throw UserError(ErrorKind::kValue,
                    fmt::format("{} starts at address {:#x} and its {} elements run past the end "
                                "of the address space",
                                what, reinterpret_cast<uint64_t>(t.data), shape_numel(t.shape)));
}

std::vector<ArgDesc> descs_of(const std::vector<CallTensor>& ts) {
  std::vector<ArgDesc> out;
  out.reserve(ts.size());
  for (const CallTensor& t : ts)
    out.push_back({t.dtype, t.shape, t.strides, reinterpret_cast<uint64_t>(t.data)});
  return out;
}

// Where a call runs: the one device of all its tensors, checked against
// the Callable's option.
std::pair<DeviceKind, int> call_device(const Graph& g, const std::vector<std::string>& names,
                                       const std::vector<CallTensor>& inputs,
                                       const std::vector<CallTensor>& outputs,
                                       const std::string& option) {
  std::optional<std::pair<DeviceKind, int>> where;
  std::string first;
  auto visit = [&](const CallTensor& t, const std::string& what) {
    const std::pair<DeviceKind, int> d{t.device, t.device == DeviceKind::kCpu ? 0 : t.device_id};
    if (!where) {
      where = d;
      first = what;
    } else if (*where != d) {
      throw UserError(ErrorKind::kValue,
                      fmt::format("{} is on {} but {} is on {}: a call's tensors must be on one "
                                  "device",
                                  what, device_name(d.first, d.second), first,
                                  device_name(where->first, where->second)));
    }
  };
  for (size_t i = 0; i < inputs.size() && i < g.parameters().size(); ++i)
    visit(inputs[i], "input `" + g.node(g.parameters()[i]).name + "`");
  for (size_t i = 0; i < outputs.size() && i < names.size(); ++i)
    visit(outputs[i], "output `" + names[i] + "`");
  if (!where) where = {option == "cuda" ? DeviceKind::kCuda : DeviceKind::kCpu, 0};
  if (option == "cpu" && where->first != DeviceKind::kCpu)
    throw UserError(ErrorKind::kValue,
                    fmt::format("{} is on {}, but the program was compiled with device=\"cpu\"",
                                first, device_name(where->first, where->second)));
  if (option == "cuda" && where->first != DeviceKind::kCuda)
    throw UserError(ErrorKind::kValue,
                    fmt::format("{} is on the cpu, but the program was compiled with "
                                "device=\"cuda\"",
                                first));
  return *where;
}

// Checks every tensor's memory against its device (every call: the pointers
// are not in the signature), before anything reads or writes it. `libs`: the
// driver of a CUDA call; nullptr for a CPU call, which asks only a driver
// the process has loaded already.
void check_placement(const Graph& g, const std::vector<std::string>& output_names,
                     const std::vector<CallTensor>& inputs, const std::vector<CallTensor>& outputs,
                     const cuda::CudaLibraries* libs) {
  auto check = [&](const CallTensor& t, auto&& what) {
    if (shape_numel(t.shape) == 0) return;
    const cuda::PointerInfo info =
        libs ? cuda::pointer_info(*libs, t.data) : cuda::pointer_info_if_loaded(t.data);
    if (std::optional<std::string> problem = placement_problem(t, info))
      throw UserError(ErrorKind::kValue, what() + " " + *problem);
  };
  for (size_t i = 0; i < inputs.size() && i < g.parameters().size(); ++i)
    check(inputs[i], [&] { return fmt::format("input `{}`", g.node(g.parameters()[i]).name); });
  for (size_t j = 0; j < outputs.size() && j < output_names.size(); ++j)
    check(outputs[j], [&] { return fmt::format("output `{}`", output_names[j]); });
}

// Checks the outputs against the graph's at `binding`.
void check_outputs(const Graph& g, const std::vector<std::string>& names, const Binding& binding,
                   const std::vector<CallTensor>& outputs, bool cuda) {
  if (outputs.size() != g.outputs().size())
    throw UserError(ErrorKind::kValue, fmt::format("the program has {} outputs, got {}",
                                                   g.outputs().size(), outputs.size()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Node& n = g.node(g.outputs()[i]);
    const CallTensor& t = outputs[i];
    if (t.dtype != n.dtype)
      throw UserError(ErrorKind::kType, fmt::format("output `{}` must be {}, got {}", names[i],
                                                    dtype_name(n.dtype), dtype_name(t.dtype)));
    const Shape want = bound_shape(n, binding);
    if (t.shape != want)
      throw UserError(ErrorKind::kValue,
                      fmt::format("output `{}` must have shape {}, got {}", names[i],
                                  shape_to_string(want), shape_to_string(t.shape)));
    if (!is_contiguous(t.shape, t.strides))
      throw UserError(ErrorKind::kValue,
                      fmt::format("output `{}` must be contiguous (row-major), got strides {}",
                                  names[i], shape_to_string(t.strides)));
    if (cuda && reinterpret_cast<uint64_t>(t.data) % 16 != 0 && shape_numel(t.shape) > 0)
      throw UserError(ErrorKind::kValue,
                      fmt::format("output `{}` must be 16-byte aligned on the GPU", names[i]));
  }
}

}  // namespace

std::optional<std::string> placement_problem(const CallTensor& t, const cuda::PointerInfo& info) {
  using Kind = cuda::PointerInfo::Kind;
  if (shape_numel(t.shape) == 0 || info.kind == Kind::kManaged) return std::nullopt;
  const auto address = reinterpret_cast<std::uintptr_t>(t.data);
  if (t.device == DeviceKind::kCpu) {
    if (info.kind != Kind::kDevice) return std::nullopt;
    return fmt::format("is a CPU tensor (DLPack kDLCPU) but its data pointer 0x{:x} is device "
                       "memory of cuda:{}: pass it as a CUDA tensor (kDLCUDA, device_id {})",
                       address, info.device, info.device);
  }
  const std::string declared = fmt::format("is declared on cuda:{} (DLPack kDLCUDA)", t.device_id);
  switch (info.kind) {
    case Kind::kDevice:
      if (info.device == t.device_id) return std::nullopt;
      return fmt::format("{} but its memory is on cuda:{}: give the tensor's device_id as {}",
                         declared, info.device, info.device);
    case Kind::kHost:
      return fmt::format("{} but its data pointer 0x{:x} is page-locked host memory: pass it as a "
                         "CPU tensor (kDLCPU or kDLCUDAHost)",
                         declared, address);
    case Kind::kNotCuda:
    case Kind::kManaged:
      break;
  }
  return fmt::format("{} but its data pointer 0x{:x} is not CUDA memory (host memory?): pass "
                     "memory of that GPU, or a host tensor as kDLCPU",
                     declared, address);
}

std::vector<Shape> Callable::output_shapes(const std::vector<CallTensor>& inputs) const {
  const Graph& g = program_.graph;
  const Binding b = bind_symbols(g, descs_of(inputs));
  std::vector<Shape> out;
  for (ValueId o : g.outputs()) out.push_back(bound_shape(g.node(o), b));
  return out;
}

// What a call key resolves to: its entry, compiled on first use.
namespace {

struct Resolved {
  PlanKind plan = PlanKind::kFused;
  LowerOptions lower;
  bool cublaslt = false;
};

// Every step's config as the compile will choose it (so that two size
// buckets whose heuristic configs agree share one compiled program).
std::string configs_key(const Graph& g, const Plan& plan, const LowerOptions& lower, bool wgmma) {
  const DimEnv env(g, lower.specialization);
  std::string key;
  for (const KernelStep& step : plan.steps) {
    if (step.kind == StepKind::kGemm) {
      const GemmConfig c = lower.gemm_config.value_or(default_gemm_config(env, step, wgmma));
      key += fmt::format(" {}g{}", gemm_config_name(c), c.group_m);
    } else {
      const PointwiseConfig c =
          lower.pointwise_config.value_or(default_pointwise_config(env, g.node(step.output)));
      key += fmt::format(" {}:{}x{}/{}/{}", c.tile_2d, c.block_m, c.block_n, c.block_size,
                         c.num_warps);
    }
  }
  return key;
}

}  // namespace

std::size_t Callable::workspace_bytes(const std::vector<CallTensor>& inputs) {
  const Graph& g = program_.graph;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  cuda::CurrentContextGuard restore;
  const auto [kind, device_id] = call_device(g, impl_->output_names, inputs, {}, options_.device);
  // The inputs are checked as a call checks them, on the CPU too (which
  // needs no workspace).
  const std::vector<ArgDesc> args = descs_of(inputs);
  const Binding binding = bind_symbols(g, args);
  // (Observed as the call will be, so both resolve to one entry.)
  const Specialization spec = impl_->stride_policy.specialize_observed(g, binding, args);
  if (kind == DeviceKind::kCpu) return 0;
  const Entry* entry = resolve(kind, device_id, spec, nullptr);
  return entry->cuda->workspace_bytes(binding);
}

Callable::Entry* Callable::resolve(DeviceKind kind, int device_id, const Specialization& spec,
                                   void* stream) {
  const Graph& g = program_.graph;
  const bool cuda = kind == DeviceKind::kCuda;
  // The entry of this call key: compiled on first use.
  std::string call_key = device_name(kind, device_id) + " " + spec.key(g);
  for (int64_t h : spec.size_hints) fmt::format_to(std::back_inserter(call_key), " {}", h);
  Entry* entry = nullptr;
  if (auto it = impl_->by_call.find(call_key); it != impl_->by_call.end()) {
    entry = it->second;
  } else {
    cuda::Device* dev = cuda ? &cuda_device(device_id) : nullptr;
    if (dev && dev->is_capturing(static_cast<cuda::CUstream>(stream)))
      throw UserError(
          "the first call at these sizes compiles and loads kernels, which a CUDA graph "
          "capture does not allow: call the program once at these sizes before capturing");
    const tir::Target target = dev ? target_of(*dev) : tir::Target::cpu();
    Resolved r;
    r.plan = options_.plan == "unfused" ? PlanKind::kUnfused : PlanKind::kFused;
    if (dev && options_.tuning) {
      const std::vector<int64_t> buckets = g.symbols().empty() ? std::vector<int64_t>{}
                                                                : spec.size_hints;
      if (std::optional<TunedChoice> choice =
              cached_choice(g, cuda_tune_device(device_id), options_.allow_tf32, {}, buckets,
                            options_.cache_root)) {
        if (options_.plan == "auto") {
          r.plan = choice->plan;
          r.cublaslt = choice->cublaslt && cuda::cublaslt_available();
        }
        r.lower = choice->lower_for(r.plan);
      }
    }
    r.lower.specialization = spec;
    const Plan plan = build_plan(g, r.plan);
    const std::string entry_key = fmt::format(
        "{} {} {}{} {}{}", target.name(), spec.key(g), plan_kind_name(r.plan),
        r.cublaslt ? "+cublaslt" : "", configs_key(g, plan, r.lower, target.has_wgmma()),
        device_name(kind, device_id));
    // (Inserted only once compiled and loaded: a failed compile or load
    // left a null entry behind, which synchronize() then dereferenced.)
    auto found = impl_->entries.find(entry_key);
    if (found == impl_->entries.end()) {
      auto e = std::make_unique<Entry>();
      CompileOptions co;
      co.plan = r.plan;
      co.target = target;
      co.lower = r.lower;
      co.allow_tf32 = options_.allow_tf32;
      e->compiled = std::make_unique<CompiledProgram>(compile(g, co));
      if (dev) {
        CudaProgramOptions po;
        po.cublaslt_gemms = r.cublaslt;
        po.cache_root = options_.cache_root;
        e->cuda = std::make_unique<CudaProgram>(*e->compiled, *dev, po);
        e->device_id = device_id;
      }
      ++impl_->compiles;
      found = impl_->entries.emplace(entry_key, std::move(e)).first;
      if (CudaProgram* loaded = found->second->cuda.get())
        impl_->loaded.emplace_back(device_id, loaded);
    }
    entry = found->second.get();
    impl_->by_call[call_key] = entry;
  }

  return entry;
}

void Callable::call(const std::vector<CallTensor>& inputs, const std::vector<CallTensor>& outputs,
                    const CallContext& context) {
  const Graph& g = program_.graph;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  // The devices' contexts are made current to compile, load and launch;
  // the caller's is current again when the call returns or throws.
  cuda::CurrentContextGuard restore;
  std::vector<int64_t>& signature = impl_->signature;
  signature.clear();
  signature_of(inputs, &signature);
  signature.push_back(-1);
  signature_of(outputs, &signature);
  if (signature != impl_->last_signature || !impl_->last_entry) {
    impl_->last_entry = nullptr;
    // (The count first: the names below index the parameters by position.)
    check_input_count(g, inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      check_layout(inputs[i], fmt::format("input `{}`", g.node(g.parameters()[i]).name));
    for (size_t j = 0; j < outputs.size() && j < impl_->output_names.size(); ++j)
      check_layout(outputs[j], fmt::format("output `{}`", impl_->output_names[j]));
    const auto [kind, device_id] =
        call_device(g, impl_->output_names, inputs, outputs, options_.device);
    const std::vector<ArgDesc> args = descs_of(inputs);
    Binding binding = bind_symbols(g, args);
    check_outputs(g, impl_->output_names, binding, outputs, kind == DeviceKind::kCuda);
    const Specialization spec = impl_->stride_policy.specialize_observed(g, binding, args);
    Entry* entry = resolve(kind, device_id, spec, context.stream);
    cuda::Device* dev = nullptr;
    std::size_t needed = 0;
    if (kind == DeviceKind::kCuda) {
      dev = &cuda_device(device_id);
      impl_->devices.insert(device_id);
      needed = entry->cuda->workspace_bytes(binding);
    }
    impl_->last_signature.swap(signature);
    impl_->last_binding = std::move(binding);
    impl_->last_kind = kind;
    impl_->last_device = device_id;
    impl_->last_cuda = dev;
    impl_->last_workspace_needed = needed;
    impl_->last_entry = entry;
  }
  Entry* entry = impl_->last_entry;
  const Binding& binding = impl_->last_binding;
  const bool cuda = impl_->last_kind == DeviceKind::kCuda;
  const int device_id = impl_->last_device;
  // Each tensor's byte span once, for the checks below. (The names are
  // formatted only for a tensor that fails.)
  auto& in_spans = impl_->input_spans;
  auto& out_spans = impl_->output_spans;
  in_spans.clear();
  out_spans.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    in_spans.push_back(byte_span(inputs[i]));
    if (inputs[i].data == nullptr || wraps(in_spans.back()))
      check_data(inputs[i], fmt::format("input `{}`", g.node(g.parameters()[i]).name));
  }
  for (size_t j = 0; j < outputs.size(); ++j) {
    out_spans.push_back(byte_span(outputs[j]));
    if (outputs[j].data == nullptr || wraps(out_spans.back()))
      check_data(outputs[j], fmt::format("output `{}`", impl_->output_names[j]));
  }
  check_placement(g, impl_->output_names, inputs, outputs,
                  cuda ? &impl_->last_cuda->libs() : nullptr);
  // Outputs never overlap inputs: the kernels read inputs that no write can
  // change (tir/ir.h, "Hoisting"). Nor each other: one would silently lose
  // the other's values. A tensor with no elements overlaps nothing, wherever
  // its pointer is (an empty slice points into its base's memory).
  for (size_t j = 0; j < outputs.size(); ++j) {
    const auto [olo, ohi] = out_spans[j];
    if (olo == ohi) continue;
    for (size_t k = 0; k < j; ++k) {
      const auto [klo, khi] = out_spans[k];
      if (klo != khi && klo < ohi && olo < khi)
        throw UserError(ErrorKind::kValue,
                        fmt::format("output `{}` overlaps output `{}`; each output needs memory "
                                    "of its own",
                                    impl_->output_names[j], impl_->output_names[k]));
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto [ilo, ihi] = in_spans[i];
      if (ilo != ihi && ilo < ohi && olo < ihi)
        throw UserError(ErrorKind::kValue,
                        fmt::format("output `{}` overlaps input `{}`; outputs must not share "
                                    "memory with inputs",
                                    impl_->output_names[j],
                                    g.node(g.parameters()[i]).name));
    }
  }

  if (!cuda) {
    // The CPU executor on views of the caller's memory; the results are
    // copied into the outputs.
    std::vector<Tensor> in;
    in.reserve(inputs.size());
    for (const CallTensor& t : inputs) in.push_back(Tensor::from_blob(t.data, t.dtype, t.shape, t.strides));
    ExecuteOptions xo;
    xo.num_threads = options_.cpu_threads;
    xo.bound_graph = [this](const Binding& binding) {
      const SymbolValues values = symbol_values(program_.graph, binding);
      return parse_program(program_.source, program_.file, &values).graph;
    };
    const std::vector<Tensor> results = execute(*entry->compiled, in, xo);
    for (size_t i = 0; i < results.size(); ++i) {
      const Tensor r = results[i].contiguous();
      const std::size_t bytes = static_cast<std::size_t>(r.numel()) * dtype_size(r.dtype());
      if (bytes) std::memcpy(outputs[i].data, r.data_ptr(), bytes);
    }
    return;
  }

  // The last call's device (cuda_device made it current then, and `restore`
  // put the caller's back).
  cuda::Device& dev = *impl_->last_cuda;
  dev.make_current();
  // A failed check of an earlier call surfaces now (its kernel has finished
  // when the word is set).
  for (const auto& [id, loaded] : impl_->loaded)
    if (id == device_id) loaded->poll_status();
  const auto stream = static_cast<cuda::CUstream>(context.stream);
  if (!dev.owns_stream(stream))
    throw UserError(ErrorKind::kValue,
                    fmt::format("the call's stream is not a stream of cuda:{}'s primary context, "
                                "where its tensors are and tilefuse launches: pass a stream of "
                                "that device (torch.cuda.current_stream(device))",
                                device_id));
  const std::size_t needed = impl_->last_workspace_needed;
  if (needed > context.workspace_bytes || (needed > 0 && !context.workspace))
    throw WorkspaceTooSmall(needed);
  if (context.sync && dev.is_capturing(stream))
    throw UserError("check=\"sync\" waits for the stream, which a CUDA graph capture does not "
                    "allow; capture without it");
  // Filled in place: the vectors keep their storage from the last call.
  DeviceCall& dc = impl_->device_call;
  dc.binding = binding;
  dc.inputs.clear();
  dc.input_strides.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    dc.inputs.push_back(reinterpret_cast<cuda::CUdeviceptr>(inputs[i].data));
    dc.input_strides[i] = inputs[i].strides;
  }
  dc.outputs.clear();
  for (const CallTensor& t : outputs) dc.outputs.push_back(reinterpret_cast<cuda::CUdeviceptr>(t.data));
  dc.workspace = reinterpret_cast<cuda::CUdeviceptr>(context.workspace);
  dc.workspace_bytes = context.workspace_bytes;
  entry->cuda->launch(dc, stream);
  if (context.sync) entry->cuda->check_status(stream);
}

void Callable::synchronize() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  cuda::CurrentContextGuard restore;
  for (int id : impl_->devices) cuda_device(id).synchronize();
  for (const auto& [key, e] : impl_->entries)
    if (e->cuda) e->cuda->poll_status();
}

json Callable::explain(const std::vector<CallTensor>* inputs, const std::string& target_name) {
  const Graph& g = program_.graph;
  cuda::CurrentContextGuard restore;
  tir::Target target = tir::Target::cpu();
  if (!target_name.empty()) {
    std::optional<tir::Target> t = tir::Target::parse(target_name);
    if (!t)
      throw UserError(ErrorKind::kValue,
                      "unknown target `" + target_name + "`; valid targets: " + tir::kTargetNames);
    target = *t;
  } else if (options_.device != "cpu" && cuda::cuda_available()) {
    target = target_of(cuda_device(0));
  }
  CompileOptions co;
  co.plan = options_.plan == "unfused" ? PlanKind::kUnfused : PlanKind::kFused;
  co.target = target;
  co.allow_tf32 = options_.allow_tf32;
  if (inputs) {
    const std::vector<ArgDesc> args = descs_of(*inputs);
    // The kernels a call with these inputs would run: the layouts observed
    // as that call would observe them (on a copy: explain is not a call).
    const Binding binding = bind_symbols(g, args);
    StridePolicy policy;
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      policy = impl_->stride_policy;
    }
    co.lower.specialization = policy.specialize_observed(g, binding, args);
  }
  return driver::explain(compile(g, co), program_.name);
}

std::vector<std::string> Callable::tune(const std::vector<SymbolValues>& sizes, bool retune) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  cuda::CurrentContextGuard restore;
  std::vector<std::string> lines;
  std::string why_not;
  const bool gpu = options_.device != "cpu" && cuda::cuda_available(&why_not);
  if (!gpu) {
    // Bad bindings are the caller's first problem; then there is nothing a
    // CPU could tune (the executor runs the fused plan at its heuristic
    // config).
    const Graph& g = program_.graph;
    for (const SymbolValues& values : sizes)
      binding_of(g, values, "give every symbol a size");
    throw UserError(ErrorKind::kUnsupported,
                    options_.device == "cpu"
                        ? std::string("tuning needs a CUDA device, but the program was compiled "
                                      "with device=\"cpu\"; nothing was tuned (the CPU executor "
                                      "runs the fused plan at its heuristic config)")
                        : "tuning needs a CUDA device, and no GPU is usable (" + why_not +
                              "); nothing was tuned");
  }
  for (const SymbolValues& values : sizes) {
    TuneOptions to;
    if (gpu) to.device = cuda_tune_device();
    to.retune = retune;
    to.allow_tf32 = options_.allow_tf32;
    to.cache_root = options_.cache_root;
    to.name = program_.name;
    to.progress = false;
    lines.push_back(tune_at(program_, values, to, gpu));
  }
  // A new tuning changes what the next calls in its buckets resolve to.
  impl_->by_call.clear();
  impl_->last_entry = nullptr;
  impl_->last_signature.clear();
  impl_->last_cuda = nullptr;
  return lines;
}

int Callable::compile_count() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->compiles;
}

std::string tune_at(const Program& generic, const SymbolValues& values, TuneOptions options,
                    bool gpu, uint64_t seed) {
  const Graph& g = generic.graph;
  const Program bound = g.symbols().empty() ? generic
                                            : parse_program(generic.source, generic.file, &values);
  const Binding binding = g.symbols().empty() ? Binding{} : binding_of(g, values, "");
  std::string where = g.symbols().empty() ? std::string("its shape") : binding_string(g, binding);
  if (!g.symbols().empty()) {
    std::string buckets;
    for (size_t s = 0; s < binding.size(); ++s)
      buckets += fmt::format("{}{}={}", s ? ", " : "", g.symbols()[s].name, size_bucket(binding[s]));
    where += " (bucket " + buckets + ")";
  }
  if (!gpu)
    return fmt::format("{}: {}: not tuned: on the CPU the executor runs the fused plan at its "
                       "heuristic config",
                       generic.name, where);
  const std::vector<Tensor> inputs = make_random_inputs(bound.graph, seed, options.cpu_threads);
  if (!g.symbols().empty()) {
    std::vector<ArgDesc> args;
    for (const Tensor& t : inputs) args.push_back(ArgDesc::of(t));
    options.specialization = specialize(g, binding, args);
  }
  const TuneResult tr = driver::tune(g, inputs, options);
  return fmt::format("{}: {}: {} ({})", generic.name, where, tr.choice.summary(),
                     tr.from_cache ? std::string("cached")
                                   : fmt::format("searched {} candidates in {:.1f} s",
                                                 tr.candidates, tr.seconds));
}

}  // namespace tilefuse::driver
