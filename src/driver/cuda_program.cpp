#include "driver/cuda_program.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "driver/execute.h"
#include "driver/specialize.h"
#include "driver/tune.h"
#include "reference/eval.h"
#include "runtime/cache/kernel_cache.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/loader.h"

namespace tilefuse::driver {
namespace {

// The blocks a persistent kernel (codegen::CudaKernel::persistent) launches
// over its `tiles`: its stream-K units (no block waits on another: any
// count is correct), else one block an SM, at most one a tile, in whole
// clusters (the cluster pass pairs tiles 2c + jG, 2c + 1 + jG of the blocks
// 2c, 2c + 1 of a grid of G blocks: G a multiple of the cluster, and the
// tiles are). A GPU whose clusters cannot all be resident at once still
// runs them all, the later ones after the first finish.
int64_t persistent_launch_blocks(const codegen::CudaKernel& code, int64_t tiles, int sm_count) {
  if (code.stream_k_units > 0) return code.stream_k_units;
  const int64_t cluster = std::max(code.cluster_size, 1);
  const int64_t whole = std::max<int64_t>(sm_count / cluster * cluster, cluster);
  return std::min<int64_t>(tiles, whole);
}

// tf::Status (tf_status.cuh): int code, int pad, long long
// args[kStatusArgs].
using codegen::kStatusArgs;
struct HostStatus {
  int32_t code;
  int32_t pad;
  int64_t args[kStatusArgs];
};
static_assert(sizeof(HostStatus) == 8 + 8 * kStatusArgs);

// Replaces each "{}" of `message` with the next argument.
std::string format_check(const std::string& message, const int64_t* args, int num_args) {
  std::string out;
  int next = 0;
  for (size_t i = 0; i < message.size(); ++i) {
    if (message.compare(i, 2, "{}") == 0 && next < num_args) {
      out += std::to_string(args[next++]);
      ++i;
    } else {
      out += message[i];
    }
  }
  return out;
}

// The device-side check of the indices no kernel reads
// (tf_index_check.cuh): its status ids start here, past any kernel's own
// check ids (1, 2, ... per kernel), one per checked gather.
constexpr int kIndexCheckIdBase = 1 << 24;

// tf::IndexView (tf_index_check.cuh), as the kernel takes it by value.
constexpr int kIndexViewRank = 8;  // tf::kIndexCheckMaxRank
struct HostIndexView {
  int64_t shape[kIndexViewRank];
  int64_t strides[kIndexViewRank];
};
static_assert(sizeof(HostIndexView) == 128);

// A strided tensor as the helper kernels take it: its view (`shape`, and
// `strides` in elements), rank and element count. `what` names the tensor
// in the internal error for more than 8 dims.
struct HelperView {
  HostIndexView view{};
  int rank = 0;
  int64_t count = 1;
};
HelperView helper_view(const Shape& shape, const std::vector<int64_t>& strides, const char* what) {
  HelperView h;
  h.rank = static_cast<int>(shape.size());
  TF_CHECK(h.rank <= kIndexViewRank && strides.size() == shape.size(),
           fmt::format("{} of more than 8 dims", what));
  for (size_t d = 0; d < shape.size(); ++d) {
    h.view.shape[d] = shape[d];
    h.view.strides[d] = strides[d];
    h.count *= shape[d];
  }
  return h;
}

// Launches helper kernel `f` (a grid-stride loop over `count` elements,
// tf::kIndexCheckThreads = tf::kViewCopyThreads threads a block) with
// `args` on `stream`: at most 4 blocks an SM.
void launch_helper(const cuda::Function& f, int64_t count, int sm_count, void** args,
                   cuda::CUstream stream) {
  constexpr int64_t kThreads = 256;
  const int64_t blocks =
      std::min<int64_t>((count + kThreads - 1) / kThreads, 4 * int64_t{sm_count});
  f.launch({static_cast<unsigned>(blocks), 1, 1}, {static_cast<unsigned>(kThreads), 1, 1}, 0, args,
           stream);
}

// The driver's helper kernels' translation unit: the check of the gathers'
// indices, one entry per index dtype; the copy of a strided parameter
// returned as is, one entry per element size.
constexpr const char* kIndexCheckSource =
    "// tilefuse: the device-side check of the gathers' indices no kernel reads\n"
    "#include \"tf_status.cuh\"\n"
    "#include \"tf_index_check.cuh\"\n"
    "#include \"tf_view_copy.cuh\"\n"
    "TF_INDEX_CHECK_ENTRY(tf_check_indices_i32, int)\n"
    "TF_INDEX_CHECK_ENTRY(tf_check_indices_i64, long long)\n"
    "TF_VIEW_COPY_ENTRY(tf_copy_view_1, unsigned char)\n"
    "TF_VIEW_COPY_ENTRY(tf_copy_view_2, unsigned short)\n"
    "TF_VIEW_COPY_ENTRY(tf_copy_view_4, unsigned int)\n"
    "TF_VIEW_COPY_ENTRY(tf_copy_view_8, unsigned long long)\n";

// The element sizes of tf_copy_view_<bytes>, in the order Impl::copy_view
// holds them.
constexpr int kViewCopyBytes[4] = {1, 2, 4, 8};

}  // namespace

cuda::Device& default_device() {
  return cuda_device(0);
}

cuda::Device& cuda_device(int ordinal) {
  // Opened once per ordinal and kept for the process (contexts are the
  // primary ones, shared with the CUDA runtime).
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<cuda::Device>> devices;
  cuda::Device* d = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    std::unique_ptr<cuda::Device>& slot = devices[ordinal];
    if (!slot) slot = std::make_unique<cuda::Device>(ordinal);
    d = slot.get();
  }
  d->make_current();
  return *d;
}

std::string index_check_source() {
  return kIndexCheckSource;
}

cuda::CompileOptions cuda_compile_options(const std::string& arch) {
  cuda::CompileOptions o;
  o.arch = arch;
  o.extra = {"-std=c++17", "--ptxas-options=-v"};
  return o;
}

static_assert(std::endian::native == std::endian::little,
              "an i32 kernel argument is passed as the low half of its 64-bit slot");

struct CudaProgram::Impl {
  struct Kernel {
    std::unique_ptr<cuda::Module> module;
    cuda::Function function;
    std::vector<ValueId> bindings;
    // Its scratch params (LoweredKernel::scratch: a split-K workspace and
    // tile counters), allocated once with the program; the counters zeroed
    // once (the kernel leaves them at 0, so launches and graph replays
    // need no reset).
    std::vector<cuda::DeviceBuffer> scratch;
    const CompiledKernel* compiled = nullptr;
    const codegen::CudaKernel* code = nullptr;
    // Its launch's dynamic shared memory (code->dynamic_shared_bytes, or
    // an override source's own: override_dynamic_shared_bytes).
    int64_t dynamic_shared_bytes = 0;
    // Per launch: the buffers' addresses, the scalars (each in a 64-bit
    // slot), the status word; the TMA maps, re-encoded only when the
    // addresses change; and a pointer to each for cuLaunchKernel.
    std::vector<cuda::CUdeviceptr> arg_values;
    std::vector<int64_t> scalar_values;
    cuda::CUdeviceptr status_arg = 0;
    std::vector<cuda::TensorMap> tensor_maps;
    std::vector<cuda::CUdeviceptr> tensor_map_bases;
    std::vector<cuda::CUdeviceptr> bases_scratch;  // this launch's, compared with the above
    std::vector<void*> args;
    // The grid's block count (launch_blocks) and the scalars it was
    // computed from (a repeated call at the same sizes skips evaluating the
    // extents; a constant grid is evaluated once), and the blocks the next
    // launch runs (prepare_launches: a persistent kernel's fewer; 0 for an
    // empty grid).
    std::vector<int64_t> grid_scalars;
    int64_t grid_blocks = -1;
    int64_t launch_blocks = 0;
    int64_t launched_blocks = 0;  // the last launch's blocks (0: none)
    // cuBLASLt instead of our kernel: C = A @ B over these values.
    std::unique_ptr<cuda::CublasLtGemm> blas;
    ValueId blas_a = -1, blas_b = -1, blas_c = -1;
  };
  std::vector<Kernel> kernels;
  // Recorded on the stream after each launch(DeviceCall) that is not
  // captured into a graph (record_after), and on the legacy stream by the
  // destructor for the host path's launches (below): the
  // destructor waits for it, not for the whole context. One event for every
  // stream: the launches of one program are ordered (they share the split-K
  // counters and the status words), so the last one finishing means all
  // have. `launched_recorded`: whether it was ever recorded.
  std::unique_ptr<cuda::Event> launched;
  bool launched_recorded = false;
  // The host path (launch(), launch_step()) launches on the legacy stream,
  // which outlives the program: instead of an event after each launch (it
  // would sit inside bench's and the tuner's timed interval), a flag that
  // check_status() clears once it has synchronized, and the destructor
  // records `launched` there then and waits for it.
  bool host_launches_pending = false;
  // The host path's memory (bind): the inputs (maybe shared with other
  // programs), every step output's buffer, and the binding.
  std::shared_ptr<const DeviceInputs> inputs;
  std::map<ValueId, cuda::DeviceBuffer> memory;
  std::vector<cuda::CUdeviceptr> where;  // by ValueId
  std::vector<int64_t> binding;
  std::vector<std::vector<int64_t>> input_strides;
  bool bound = false;
  std::unique_ptr<cuda::MappedHostBuffer> status;
  // launch(DeviceCall)'s value addresses, kept so that a call allocates
  // nothing (one launch at a time per CudaProgram).
  std::vector<cuda::CUdeviceptr> call_where;

  // The device-side check of the indices no kernel reads, for
  // launch(DeviceCall): each gather whose index tensor is a parameter, in
  // program order (its status id kIndexCheckIdBase + its place here).
  struct IndexCheck {
    ValueId gather = -1;
    size_t param = 0;  // the index tensor's parameter position
  };
  std::vector<IndexCheck> index_checks;
  // Loaded where a call may need it (index_checks not empty, and the
  // condition holds at the fixed sizes or the graph has symbolic dims; or
  // a graph output is a parameter, for copy_view).
  std::unique_ptr<cuda::Module> check_module;
  cuda::Function check_i32, check_i64;
  // tf_copy_view_<kViewCopyBytes[i]>: launch(DeviceCall)'s copy of a
  // parameter returned as is whose input is not contiguous.
  cuda::Function copy_view[4];
  // The kernels' lowest failing position (ULLONG_MAX: none) and arrival
  // counter (0): allocated once, left so by every launch (the program's,
  // as split-K's counters are: launches that overlap on the device, on two
  // streams, would share them).
  std::unique_ptr<cuda::DeviceBuffer> check_first_bad, check_arrived;
  // indices_may_go_unread at the last call's binding (-1: not known).
  std::vector<int64_t> unread_binding;
  int unread = -1;
  int64_t check_launches = 0;
};

namespace {

// The cuBLASLt problem of a plain GEMM step (see CudaProgramOptions), or
// nullopt when the step is not plain.
std::optional<cuda::GemmProblem> plain_gemm(const CompiledProgram& program, const KernelStep& step) {
  const Graph& g = program.graph;
  // cuBLASLt reads row-major contiguous, 16-byte aligned operands: a
  // parameter the specialization lays out otherwise keeps our kernel.
  const std::vector<ValueId>& params = g.parameters();
  for (ValueId v : {step.a.operand, step.b.operand}) {
    auto it = std::find(params.begin(), params.end(), v);
    if (it == params.end() || program.specialization.params.empty()) continue;
    const ParamLayout& layout = program.specialization.params[static_cast<size_t>(it - params.begin())];
    if (!layout.strides.empty() || layout.alignment < 16) return std::nullopt;
  }
  if (step.kind != StepKind::kGemm || !step.a.nodes.empty() || !step.b.nodes.empty() || step.bias ||
      !step.epilogue.empty() || step.gemm.a_is_vector || step.gemm.b_is_vector)
    return std::nullopt;
  // cuBLASLt's algorithm is chosen for one problem size: symbolic dims keep
  // our kernel.
  if (step.gemm.m_symbol != kFixedDim || step.gemm.n_symbol != kFixedDim ||
      step.gemm.k_symbol != kFixedDim || !step.gemm.batch_symbols.empty())
    return std::nullopt;
  const Node &a = g.node(step.a.operand), &b = g.node(step.b.operand);
  const DType dt = a.dtype;
  if (b.dtype != dt || g.node(step.output).dtype != dt ||
      (dt != DType::F16 && dt != DType::BF16 && dt != DType::F32))
    return std::nullopt;
  const int64_t batch = shape_numel(step.gemm.batch);
  // Both operands carry the full batch (no broadcast) as contiguous values.
  auto full = [&](const Node& n, int64_t r, int64_t c) {
    Shape want = step.gemm.batch;
    want.push_back(r);
    want.push_back(c);
    return n.shape == want;
  };
  if (!full(a, step.gemm.m, step.gemm.k) || !full(b, step.gemm.k, step.gemm.n)) return std::nullopt;
  if (step.gemm.m == 0 || step.gemm.n == 0 || step.gemm.k == 0 || batch > INT32_MAX)
    return std::nullopt;
  cuda::GemmProblem p;
  p.m = step.gemm.m, p.n = step.gemm.n, p.k = step.gemm.k;
  p.batch = static_cast<int>(batch);
  return p;
}

}  // namespace

std::vector<size_t> cublaslt_gemm_kernels(const CompiledProgram& program) {
  std::vector<size_t> out;
  for (size_t i = 0; i < program.kernels.size(); ++i)
    if (plain_gemm(program, program.kernels[i].lowered.step)) out.push_back(i);
  return out;
}

CudaProgram::CudaProgram(const CompiledProgram& program, cuda::Device& device,
                         const CudaProgramOptions& options)
    : program_(program), device_(device), impl_(std::make_unique<Impl>()) {
  TF_CHECK(program.target.is_cuda(),
           "CudaProgram: the program is compiled for " + program.target.name());
  const std::string arch = program.target.name();
  if (program.target.sm / 10 != device.cc_major())
    throw UserError(fmt::format("the program is compiled for {} but the GPU ({}) is {}", arch,
                                device.name(), device.arch()));
  device.make_current();
  for (const CompiledKernel& ck : program.kernels) {
    TF_CHECK(ck.cuda.has_value(), "kernel " + ck.kernel.name + " has no CUDA code");
    if (options.cublaslt_gemms) {
      if (std::optional<cuda::GemmProblem> p = plain_gemm(program, ck.lowered.step)) {
        Impl::Kernel k;
        k.code = &*ck.cuda;
        // The baseline under the same numerics as our kernels: f32 GEMMs on
        // TF32 (CUBLAS_COMPUTE_32F_FAST_TF32) only when the program allows it.
        cuda::CublasLtOptions blas_options;
        blas_options.allow_tf32 = program.allow_tf32;
        blas_options.algorithms = std::max(1, options.cublaslt_algorithms);
        k.blas = std::make_unique<cuda::CublasLtGemm>(
            device, program.graph.node(ck.lowered.step.a.operand).dtype, *p, blas_options);
        k.blas_a = ck.lowered.step.a.operand;
        k.blas_b = ck.lowered.step.b.operand;
        k.blas_c = ck.lowered.step.output;
        CudaKernelStats st;
        st.name = k.blas->describe();
        stats_.push_back(st);
        impl_->kernels.push_back(std::move(k));
        continue;
      }
    }
    const codegen::CudaKernel& code = *ck.cuda;
    CudaKernelStats st;
    st.name = code.name;
    const auto t0 = std::chrono::steady_clock::now();
    // Debugging aid: TILEFUSE_OVERRIDE_SOURCE=DIR compiles DIR/<kernel>.cu,
    // when it exists, instead of the emitted source (same entry and params).
    std::string source = code.source;
    int64_t shared_bytes = code.dynamic_shared_bytes;
    if (const char* dir = std::getenv("TILEFUSE_OVERRIDE_SOURCE"); dir && *dir) {
      if (std::optional<std::string> text = read_override_source(dir, code.name)) {
        source = std::move(*text);
        // Named first, so that a malformed directive's error follows its file.
        std::fprintf(stderr, "tilefuse: kernel %s from %s/%s.cu (TILEFUSE_OVERRIDE_SOURCE)\n",
                     code.name.c_str(), dir, code.name.c_str());
        if (std::optional<int64_t> n = override_dynamic_shared_bytes(source)) shared_bytes = *n;
      }
    }
    cuda::CompiledKernel bin =
        cache::compile_cuda_cached(source, code.name, cuda_compile_options(arch), &st.from_cache,
                                   options.cache_root);
    st.compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    st.usage = bin.usage;
    // Debugging aid: TILEFUSE_DUMP_CUBIN=DIR writes each kernel's source and
    // cubin there (for cuobjdump --dump-sass).
    if (const char* dir = std::getenv("TILEFUSE_DUMP_CUBIN"); dir && *dir)
      dump_kernel_files(dir, code.name, source,
                        std::string_view(bin.cubin.data(), bin.cubin.size()));
    Impl::Kernel k;
    k.module = std::make_unique<cuda::Module>(device, bin.cubin);
    k.function = k.module->function(code.name);
    k.bindings = ck.lowered.bindings;
    // Params: the bound buffers, the scratch buffers, then the scalars
    // (launch_kernels passes them in this order).
    TF_CHECK(ck.lowered.bindings.size() + ck.lowered.scratch.size() + ck.lowered.scalars.size() ==
                 ck.kernel.params.size(),
             "kernel " + ck.kernel.name + ": bindings do not match its params");
    for (const ScratchBuffer& s : ck.lowered.scratch) {
      const std::size_t bytes =
          static_cast<std::size_t>(shape_numel(s.shape)) * dtype_size(s.dtype);
      k.scratch.emplace_back(device, std::max<std::size_t>(bytes, 16));
      k.scratch.back().memset(s.zeroed ? 0 : 0xFF);  // else NaN bytes: a missed write shows
    }
    k.compiled = &ck;
    k.code = &code;
    k.dynamic_shared_bytes = shared_bytes;
    if (const std::string excess = shared_memory_excess(
            code.name, shared_bytes, device.max_shared_per_block_optin(), "the GPU");
        !excess.empty())
      throw UserError(excess);
    if (shared_bytes > 48 * 1024) k.function.set_max_dynamic_shared(static_cast<int>(shared_bytes));
    st.registers = k.function.attribute(cuda::kFuncAttrNumRegs);
    st.local_bytes = k.function.attribute(cuda::kFuncAttrLocalSizeBytes);
    st.dynamic_shared_bytes = shared_bytes;
    st.threads = code.num_threads;
    st.blocks = code.grid;
    if (code.persistent && code.grid > 0)
      st.persistent_blocks = persistent_launch_blocks(code, code.grid, device.sm_count());
    st.blocks_per_sm = k.function.max_active_blocks_per_sm(code.num_threads,
                                                           static_cast<std::size_t>(shared_bytes));
    st.occupancy = st.blocks_per_sm * code.num_threads / 32 / 64.0;
    stats_.push_back(st);
    impl_->kernels.push_back(std::move(k));
  }
  impl_->launched = std::make_unique<cuda::Event>(device, /*timing=*/false);
  // One status word per reporter (status_word): the index checks, then
  // each kernel; then the index checks' report of the index tensor's shape
  // (index_check_shape).
  impl_->status = std::make_unique<cuda::MappedHostBuffer>(
      device, sizeof(HostStatus) * (impl_->kernels.size() + 1) + sizeof(int64_t) * kIndexViewRank);

  // The gathers launch(DeviceCall) checks on the device where their
  // indices may go unread (check_unread_indices' condition, per call).
  const Graph& g = program.graph;
  const std::vector<ValueId>& params = g.parameters();
  for (ValueId v = 0; v < g.size(); ++v) {
    const Node& n = g.node(v);
    if (n.kind != OpKind::Index) continue;
    const auto it = std::find(params.begin(), params.end(), n.inputs[1]);
    if (it != params.end())
      impl_->index_checks.push_back({v, static_cast<size_t>(it - params.begin())});
  }
  bool returns_a_parameter = false;
  for (ValueId o : g.outputs())
    returns_a_parameter = returns_a_parameter || g.node(o).kind == OpKind::Parameter;
  if (returns_a_parameter || (!impl_->index_checks.empty() &&
                              (!g.symbols().empty() || indices_may_go_unread(g, Binding{})))) {
    const cuda::CompiledKernel bin =
        cache::compile_cuda_cached(index_check_source(), "tf_check_indices",
                                   cuda_compile_options(arch), nullptr, options.cache_root);
    impl_->check_module = std::make_unique<cuda::Module>(device, bin.cubin);
    impl_->check_i32 = impl_->check_module->function("tf_check_indices_i32");
    impl_->check_i64 = impl_->check_module->function("tf_check_indices_i64");
    for (size_t i = 0; i < 4; ++i)
      impl_->copy_view[i] =
          impl_->check_module->function(fmt::format("tf_copy_view_{}", kViewCopyBytes[i]));
    impl_->check_first_bad = std::make_unique<cuda::DeviceBuffer>(device, 8);
    impl_->check_first_bad->memset(0xFF);
    impl_->check_arrived = std::make_unique<cuda::DeviceBuffer>(device, 8);
    impl_->check_arrived->memset(0);
  }
}

CudaProgram::~CudaProgram() {
  // Kernels of this program still running would read unloaded code and
  // write freed memory: wait for its last launch (Impl::launched), not for
  // the whole context (cuCtxSynchronize fails under a CUDA graph capture on
  // any stream of it and invalidates that capture). The event is only ever
  // recorded outside a capture (record_after), so waiting for it is legal
  // during one and returns at once where nothing is left to run; a launch
  // captured into a graph runs nothing to wait for. The frees run in relaxed
  // capture mode: under a global-mode capture they would fail and end it.
  // Errors are dropped: a destructor does not throw.
  cuda::RelaxedCaptureMode relaxed(device_.libs());
  try {
    device_.make_current();
    if (impl_->launched_recorded) impl_->launched->synchronize();
  } catch (...) {
  }
  try {
    // (The legacy stream counts as capturing while a blocking stream is
    // captured: a record there would join that capture, so none is made.)
    if (impl_->host_launches_pending && !device_.is_capturing(nullptr)) {
      impl_->launched->record(nullptr);
      impl_->launched->synchronize();
    }
  } catch (...) {
  }
  impl_.reset();
}

template <class Launches>
void CudaProgram::record_after(cuda::CUstream stream, Launches&& launches) {
  // On a stream being captured the record would be a captured event
  // (cuEventSynchronize then fails, CUDA_ERROR_CAPTURED_EVENT during the
  // capture and CUDA_ERROR_INVALID_VALUE after it): the event keeps marking
  // the last launch that really ran. (The legacy stream while a blocking
  // stream captures counts as capturing: its launches fail anyway.)
  const bool record = !device_.is_capturing(stream);
  auto mark = [&] {
    impl_->launched->record(stream);
    impl_->launched_recorded = true;
  };
  try {
    launches();
  } catch (...) {
    // What was launched before the error is waited for too (the record's
    // own error dropped for the first one's).
    try {
      if (record) mark();
    } catch (...) {
    }
    throw;
  }
  if (record) mark();
}

namespace {

// An index expression of a kernel's grid at the scalars' values (floor
// division, as the Tile IR has it).
int64_t eval_index(const tir::Expr& e, const std::map<const tir::VarNode*, int64_t>& vars) {
  if (const int64_t* c = tir::as_const_int(e)) return *c;
  if (const auto* v = e.as<tir::VarNode>()) {
    auto it = vars.find(v);
    TF_CHECK(it != vars.end(), "grid extent uses the var " + v->name + ", not a scalar param");
    return it->second;
  }
  if (const auto* c = e.as<tir::CastNode>()) return eval_index(c->value, vars);
  auto floor_div = [](int64_t a, int64_t b) {
    if (b == 0) return int64_t{0};
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
  };
#define TF_EVAL_BINARY(Kind, expr)                                     \
  if (const auto* n = e.as<tir::Kind##Node>()) {                       \
    const int64_t a = eval_index(n->a, vars), b = eval_index(n->b, vars); \
    return expr;                                                       \
  }
  TF_EVAL_BINARY(Add, a + b)
  TF_EVAL_BINARY(Sub, a - b)
  TF_EVAL_BINARY(Mul, a * b)
  TF_EVAL_BINARY(Div, floor_div(a, b))
  TF_EVAL_BINARY(Mod, b == 0 ? 0 : a - floor_div(a, b) * b)
  TF_EVAL_BINARY(Min, std::min(a, b))
  TF_EVAL_BINARY(Max, std::max(a, b))
#undef TF_EVAL_BINARY
  throw InternalError("a grid extent the host cannot evaluate: " + std::string(tir::expr_kind_name(e.kind())));
}

constexpr std::size_t kWorkspaceAlign = 256;

std::size_t round_up(std::size_t v, std::size_t a) {
  return (v + a - 1) / a * a;
}

std::size_t value_bytes(const Node& n, const std::vector<int64_t>& binding) {
  return static_cast<std::size_t>(shape_numel(bound_shape(n, binding))) * dtype_size(n.dtype);
}

}  // namespace

std::size_t CudaProgram::workspace_bytes(const std::vector<int64_t>& binding) const {
  const Graph& g = program_.graph;
  std::size_t total = 0;
  for (const CompiledKernel& ck : program_.kernels) {
    const ValueId v = ck.lowered.step.output;
    const auto& outs = g.outputs();
    if (std::find(outs.begin(), outs.end(), v) != outs.end()) continue;
    total = round_up(total, kWorkspaceAlign) + value_bytes(g.node(v), binding);
  }
  return total;
}

namespace {

std::atomic<int64_t> g_input_uploads{0};

}  // namespace

DeviceInputs::DeviceInputs(cuda::Device& device, const std::vector<Tensor>& inputs)
    : device_(device), host_(inputs) {
  device_.make_current();
  buffers_.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    Tensor c = t.contiguous(/*force=*/!t.is_contiguous());
    const std::size_t bytes = static_cast<std::size_t>(c.numel()) * dtype_size(c.dtype());
    cuda::DeviceBuffer b(device_, std::max<std::size_t>(bytes, 16));
    if (bytes) b.copy_from_host(c.data_ptr(), bytes);
    strides_.push_back(contiguous_strides(c.shape()));
    buffers_.push_back(std::move(b));
  }
  g_input_uploads.fetch_add(1, std::memory_order_relaxed);
}

DeviceInputs::~DeviceInputs() {
  // The frees in the device's context, in relaxed capture mode (as
  // ~CudaProgram's); errors dropped: a destructor does not throw.
  cuda::RelaxedCaptureMode relaxed(device_.libs());
  try {
    device_.make_current();
  } catch (...) {
  }
  buffers_.clear();
}

std::vector<cuda::CUdeviceptr> DeviceInputs::ptrs() const {
  std::vector<cuda::CUdeviceptr> out;
  out.reserve(buffers_.size());
  for (const cuda::DeviceBuffer& b : buffers_) out.push_back(b.ptr());
  return out;
}

std::size_t DeviceInputs::bytes() const {
  std::size_t total = 0;
  for (const cuda::DeviceBuffer& b : buffers_) total += b.size();
  return total;
}

int64_t DeviceInputs::uploads() {
  return g_input_uploads.load(std::memory_order_relaxed);
}

std::vector<cuda::CUdeviceptr> host_value_addresses(
    const CompiledProgram& program, const std::vector<cuda::CUdeviceptr>& inputs,
    const std::vector<cuda::CUdeviceptr>& step_outputs) {
  const Graph& g = program.graph;
  TF_CHECK(inputs.size() == g.parameters().size(),
           fmt::format("host_value_addresses: {} inputs for {} parameters", inputs.size(),
                       g.parameters().size()));
  TF_CHECK(step_outputs.size() == program.kernels.size(),
           fmt::format("host_value_addresses: {} step outputs for {} kernels", step_outputs.size(),
                       program.kernels.size()));
  std::vector<cuda::CUdeviceptr> where(static_cast<size_t>(g.size()), 0);
  for (size_t i = 0; i < inputs.size(); ++i)
    where[static_cast<size_t>(g.parameters()[i])] = inputs[i];
  for (size_t k = 0; k < step_outputs.size(); ++k)
    where[static_cast<size_t>(program.kernels[k].lowered.step.output)] = step_outputs[k];
  return where;
}

std::vector<int64_t> CudaProgram::unbind_for(const std::vector<Tensor>& host) {
  // Unbound until every buffer is in place: a bind that throws (an
  // allocation, an index check) leaves launch() refusing ("launch before
  // bind"), not reading a half-filled table.
  impl_->bound = false;
  const Graph& g = program_.graph;
  const Binding binding = bind_symbols(g, host);
  // An index no kernel reads is checked here, on the host, before upload
  // (a DeviceCall's device-resident inputs on the device:
  // launch_index_checks).
  check_unread_indices(g, binding, host);
  device_.make_current();
  // (the previous binding's memory freed before this one's is allocated)
  impl_->memory.clear();
  impl_->inputs.reset();
  return binding;
}

void CudaProgram::bind(const std::vector<Tensor>& inputs, bool poison) {
  const std::vector<int64_t> binding = unbind_for(inputs);
  bind_on(std::make_shared<const DeviceInputs>(device_, inputs), binding, poison);
}

void CudaProgram::bind(std::shared_ptr<const DeviceInputs> inputs, bool poison) {
  impl_->bound = false;  // (first: a bind that throws, these checks' included, leaves it unbound)
  TF_CHECK(inputs != nullptr, "CudaProgram::bind: no inputs");
  TF_CHECK(&inputs->device() == &device_,
           "CudaProgram::bind: inputs on another device than the program's");
  const std::vector<int64_t> binding = unbind_for(inputs->host());
  bind_on(std::move(inputs), binding, poison);
}

void CudaProgram::bind_on(std::shared_ptr<const DeviceInputs> inputs,
                          const std::vector<int64_t>& binding, bool poison) {
  const Graph& g = program_.graph;
  impl_->where.clear();
  impl_->binding = binding;
  impl_->input_strides = inputs->strides();
  impl_->inputs = std::move(inputs);
  std::vector<cuda::CUdeviceptr> step_outputs;
  for (const CompiledKernel& ck : program_.kernels) {
    const std::size_t bytes = value_bytes(g.node(ck.lowered.step.output), binding);
    cuda::DeviceBuffer b(device_, std::max<std::size_t>(bytes, 16));
    if (poison) b.memset(0xFF);
    step_outputs.push_back(b.ptr());
    impl_->memory.insert_or_assign(ck.lowered.step.output, std::move(b));
  }
  impl_->where = host_value_addresses(program_, impl_->inputs->ptrs(), step_outputs);
  // Every kernel's grid at these sizes, before anything can launch.
  prepare_launches(impl_->binding, impl_->input_strides, 0, impl_->kernels.size());
  impl_->bound = true;
}

void CudaProgram::launch(const DeviceCall& call, cuda::CUstream stream) {
  const Graph& g = program_.graph;
  device_.make_current();
  TF_CHECK(call.inputs.size() == g.parameters().size() &&
               call.input_strides.size() == g.parameters().size() &&
               call.outputs.size() == g.outputs().size() &&
               call.binding.size() == g.symbols().size(),
           "CudaProgram::launch: a call with the wrong number of tensors");
  // Intermediates are laid out from the workspace at 256-byte offsets; the
  // kernels assume 16-byte aligned buffers.
  if (call.workspace % 16 != 0)
    throw UserError(ErrorKind::kValue, "the workspace must be 16-byte aligned");
  // Where each value lives: parameters, then step outputs (a graph output in
  // the caller's memory, its first occurrence; the rest in the workspace).
  std::vector<cuda::CUdeviceptr>& where = impl_->call_where;
  where.assign(static_cast<size_t>(g.size()), 0);
  for (size_t i = 0; i < call.inputs.size(); ++i) where[g.parameters()[i]] = call.inputs[i];
  const auto& outs = g.outputs();
  std::size_t offset = 0;
  for (const CompiledKernel& ck : program_.kernels) {
    const ValueId v = ck.lowered.step.output;
    auto it = std::find(outs.begin(), outs.end(), v);
    if (it != outs.end()) {
      where[v] = call.outputs[static_cast<size_t>(it - outs.begin())];
      continue;
    }
    offset = round_up(offset, kWorkspaceAlign);
    const std::size_t bytes = value_bytes(g.node(v), call.binding);
    if (offset + bytes > call.workspace_bytes || (bytes > 0 && call.workspace == 0))
      throw UserError(fmt::format("the program needs a workspace of {} bytes at these sizes; {} "
                                  "given",
                                  workspace_bytes(call.binding), call.workspace_bytes));
    where[v] = call.workspace + offset;
    offset += bytes;
  }
  // Every kernel's grid at these sizes, before anything launches: a grid
  // no launch can take is an error with nothing run, not one found at its
  // kernel after the earlier ones ran.
  prepare_launches(call.binding, call.input_strides, 0, impl_->kernels.size());
  record_after(stream, [&] { launch_call(call, where, stream); });
}

void CudaProgram::launch_call(const DeviceCall& call, const std::vector<cuda::CUdeviceptr>& where,
                              cuda::CUstream stream) {
  const Graph& g = program_.graph;
  const auto& outs = g.outputs();
  // The indices no kernel reads, on the device before the kernels: a
  // failure is in the status word before any kernel's own check.
  launch_index_checks(call, stream);
  launch_kernels(where, call.binding, 0, impl_->kernels.size(), stream);
  // Outputs no step wrote in place: a parameter returned, a value returned
  // again.
  for (size_t i = 0; i < outs.size(); ++i) {
    const ValueId o = outs[i];
    const size_t first = static_cast<size_t>(std::find(outs.begin(), outs.end(), o) - outs.begin());
    const bool param = g.node(o).kind == OpKind::Parameter;
    if (first == i && !param) continue;
    const cuda::CUdeviceptr src = param ? where.at(o) : call.outputs[first];
    if (param) {
      // The input where it is, in its own layout: a byte copy is right
      // only where that is row-major (a transposed or broadcast input was
      // copied in memory order, and past its end).
      const size_t p = static_cast<size_t>(
          std::find(g.parameters().begin(), g.parameters().end(), o) - g.parameters().begin());
      const Shape shape = bound_shape(g.node(o), call.binding);
      const std::vector<int64_t>& strides = call.input_strides.at(p);
      if (!is_contiguous(shape, strides)) {
        copy_view(call.outputs[i], src, g.node(o).dtype, shape, strides, stream);
        continue;
      }
    }
    device_.copy_async(call.outputs[i], src, value_bytes(g.node(o), call.binding), stream);
  }
}

void CudaProgram::copy_view(cuda::CUdeviceptr dst, cuda::CUdeviceptr src, DType dtype,
                            const Shape& shape, const std::vector<int64_t>& strides,
                            cuda::CUstream stream) {
  Impl& im = *impl_;
  TF_CHECK(im.check_module != nullptr, "the view copy kernels were not loaded");
  HelperView h = helper_view(shape, strides, "a view copy");
  if (h.count == 0) return;
  const int bytes = static_cast<int>(dtype_size(dtype));
  const int* which = std::find(std::begin(kViewCopyBytes), std::end(kViewCopyBytes), bytes);
  TF_CHECK(which != std::end(kViewCopyBytes), "a view copy of elements of another size");
  const cuda::Function& f = im.copy_view[which - std::begin(kViewCopyBytes)];
  void* args[] = {&src, &dst, &h.view, &h.rank, &h.count};
  launch_helper(f, h.count, device_.sm_count(), args, stream);
}

void CudaProgram::launch_index_checks(const DeviceCall& call, cuda::CUstream stream) {
  Impl& im = *impl_;
  if (im.index_checks.empty()) return;
  const Graph& g = program_.graph;
  // The condition at this call's sizes (kept with them: a repeated call at
  // the same sizes compares the binding only).
  if (im.unread < 0 || im.unread_binding != call.binding) {
    im.unread = indices_may_go_unread(g, call.binding) ? 1 : 0;
    im.unread_binding = call.binding;
  }
  if (im.unread == 0) return;
  TF_CHECK(im.check_module != nullptr, "the index check kernels were not loaded");
  cuda::CUdeviceptr first_bad = im.check_first_bad->ptr(), arrived = im.check_arrived->ptr();
  cuda::CUdeviceptr status = status_word(0);
  cuda::CUdeviceptr shape_out = index_check_shape();
  for (size_t c = 0; c < im.index_checks.size(); ++c) {
    const Node& n = g.node(im.index_checks[c].gather);
    const Node& in = g.node(n.inputs[1]);
    const size_t param = im.index_checks[c].param;
    HelperView h =
        helper_view(bound_shape(in, call.binding), call.input_strides.at(param), "an index tensor");
    if (h.count == 0) continue;
    int64_t size = bound_shape(g.node(n.inputs[0]), call.binding).at(static_cast<size_t>(n.dim));
    int64_t lowest = n.index_wraps_negative ? -size : 0;
    cuda::CUdeviceptr idx = call.inputs.at(param);
    int id = kIndexCheckIdBase + static_cast<int>(c);
    void* args[] = {&idx,       &h.view,  &h.rank, &h.count, &size,     &lowest,
                    &first_bad, &arrived, &status, &id,      &shape_out};
    const cuda::Function& f = in.dtype == DType::I32 ? im.check_i32 : im.check_i64;
    TF_CHECK(in.dtype == DType::I32 || in.dtype == DType::I64, "an index tensor of another dtype");
    launch_helper(f, h.count, device_.sm_count(), args, stream);
    ++im.check_launches;
  }
}

int64_t CudaProgram::index_check_launches() const {
  return impl_->check_launches;
}

int64_t launch_blocks(const std::string& kernel, const std::vector<int64_t>& extents,
                      int64_t max_blocks) {
  int64_t blocks = 1;
  bool overflows = false;
  for (const int64_t e : extents) {
    if (e <= 0) return 0;
    overflows = overflows || __builtin_mul_overflow(blocks, e, &blocks);
  }
  if (!overflows && blocks <= max_blocks) return blocks;
  std::string grid;
  for (const int64_t e : extents) grid += fmt::format("{}{}", grid.empty() ? "" : " x ", e);
  throw UserError(
      ErrorKind::kValue,
      fmt::format("kernel {} needs a grid of {} = {} blocks at these sizes, more than "
                  "a launch allows (at most {} blocks); nothing was launched",
                  kernel, grid, overflows ? std::string("over 2^63") : fmt::format("{}", blocks),
                  max_blocks));
}

void CudaProgram::prepare_launches(const std::vector<int64_t>& binding,
                                   const std::vector<std::vector<int64_t>>& input_strides,
                                   size_t begin, size_t end) {
  for (size_t index = begin; index < end; ++index) {
    Impl::Kernel& k = impl_->kernels[index];
    if (k.blas) continue;
    const CompiledKernel& ck = *k.compiled;
    scalar_args_into(program_, ck, binding, input_strides, &k.scalar_values);
    // The grid: the printer's constant, or (symbolic dims, grid -1) the
    // product of the kernel's grid extents at this call's scalars (kept
    // with the scalars: the same scalars give the same grid).
    const bool constant = k.code->grid >= 0;
    if (k.grid_blocks < 0 || (!constant && k.scalar_values != k.grid_scalars)) {
      std::vector<int64_t> extents;
      if (constant) {
        extents.push_back(k.code->grid);
      } else {
        std::map<const tir::VarNode*, int64_t> vars;
        const size_t nb = k.bindings.size() + k.scratch.size();
        for (size_t i = 0; i < k.scalar_values.size(); ++i)
          vars[ck.kernel.params[nb + i].var.get()] = k.scalar_values[i];
        for (const tir::GridDim& gd : ck.kernel.grid)
          extents.push_back(eval_index(gd.extent, vars));
      }
      k.grid_blocks = -1;
      const int64_t blocks = launch_blocks(k.code->name, extents, device_.max_grid_x());
      k.grid_scalars = k.scalar_values;
      k.grid_blocks = blocks;
    }
    // A persistent kernel's blocks take the tiles in turn: one block an SM.
    // A persistent stream-K kernel's blocks are its units (no block waits
    // on another: any count is correct). An empty grid (M or N is 0)
    // launches nothing.
    k.launch_blocks = k.grid_blocks;
    if (k.code->persistent && k.grid_blocks > 0)
      k.launch_blocks = persistent_launch_blocks(*k.code, k.grid_blocks, device_.sm_count());
  }
}

void CudaProgram::launch_kernels(const std::vector<cuda::CUdeviceptr>& where,
                                 const std::vector<int64_t>& binding, size_t begin, size_t end,
                                 cuda::CUstream stream) {
  if (!first_launch_) first_launch_ = std::chrono::steady_clock::now();
  for (size_t index = begin; index < end; ++index) {
    Impl::Kernel& k = impl_->kernels[index];
    if (k.blas) {
      k.blas->run(where.at(k.blas_a), where.at(k.blas_b), where.at(k.blas_c), stream);
      continue;
    }
    const int64_t blocks = k.launch_blocks;
    // An empty grid launches nothing; its tensor maps (a dim of 0) could
    // not be encoded.
    if (blocks <= 0) {
      k.launched_blocks = 0;
      continue;
    }
    k.arg_values.clear();
    for (ValueId v : k.bindings) {
      const cuda::CUdeviceptr p = where.at(static_cast<size_t>(v));
      TF_CHECK(p != 0 || value_bytes(program_.graph.node(v), binding) == 0,
               fmt::format("kernel {} reads %{} before any step wrote it", k.code->name, v));
      k.arg_values.push_back(p);
    }
    // The scratch buffers (split-K) after the bound ones.
    for (const cuda::DeviceBuffer& s : k.scratch) k.arg_values.push_back(s.ptr());
    k.status_arg = status_word(index + 1);
    k.launched_blocks = blocks;
    // TMA maps over the bound buffers (their shapes are the kernel's
    // constants), encoded again only when an address changed.
    if (!k.code->tensor_maps.empty()) {
      std::vector<cuda::CUdeviceptr>& bases = k.bases_scratch;
      bases.clear();
      for (const codegen::CudaTensorMap& m : k.code->tensor_maps) {
        TF_CHECK(m.param >= 0 && m.param < static_cast<int>(k.bindings.size()),
                 "a tensor map of a parameter the kernel does not bind");
        bases.push_back(k.arg_values[m.param]);
      }
      // Only the maps whose buffer moved are encoded again (a fresh output
      // each call moves one map, not all); a map's base is recorded only
      // once it is encoded, so a failed encode is retried next call.
      if (bases != k.tensor_map_bases) {
        const size_t n = k.code->tensor_maps.size();
        if (k.tensor_maps.size() != n || k.tensor_map_bases.size() != n) {
          k.tensor_maps.clear();
          k.tensor_maps.resize(n);
          k.tensor_map_bases.assign(n, 0);
        }
        for (size_t i = 0; i < n; ++i) {
          if (bases[i] == k.tensor_map_bases[i] && bases[i] != 0) continue;
          const codegen::CudaTensorMap& m = k.code->tensor_maps[i];
          k.tensor_map_bases[i] = 0;
          k.tensor_maps[i] = cuda::encode_tensor_map(device_, bases[i], m.elem_bytes, m.dims,
                                                     m.strides, m.box, m.swizzle_bytes);
          k.tensor_map_bases[i] = bases[i];
        }
      }
    }
    k.args.clear();
    for (cuda::CUdeviceptr& a : k.arg_values) k.args.push_back(&a);
    for (int64_t& v : k.scalar_values) k.args.push_back(&v);
    k.args.push_back(&k.status_arg);
    for (cuda::TensorMap& m : k.tensor_maps) k.args.push_back(&m);
    k.function.launch({static_cast<unsigned>(blocks), 1, 1},
                      {static_cast<unsigned>(k.code->num_threads), 1, 1},
                      static_cast<unsigned>(k.dynamic_shared_bytes), k.args.data(), stream);
  }
}

void CudaProgram::autotune_cublaslt(const cuda::TimingOptions& options) {
  TF_CHECK(impl_->bound, "CudaProgram::autotune_cublaslt before bind");
  for (Impl::Kernel& k : impl_->kernels)
    if (k.blas && k.blas->algorithm_count() > 1)
      k.blas->autotune(impl_->where.at(static_cast<size_t>(k.blas_a)),
                       impl_->where.at(static_cast<size_t>(k.blas_b)),
                       impl_->where.at(static_cast<size_t>(k.blas_c)), options);
  for (size_t i = 0; i < impl_->kernels.size(); ++i)
    if (impl_->kernels[i].blas) stats_[i].name = impl_->kernels[i].blas->describe();
}

void CudaProgram::launch_step(size_t index) {
  TF_CHECK(impl_->bound, "CudaProgram::launch before bind");
  TF_CHECK(index < impl_->kernels.size(), "CudaProgram::launch_step: no such step");
  prepare_launches(impl_->binding, impl_->input_strides, index, index + 1);
  impl_->host_launches_pending = true;  // (also where a launch throws: earlier ones ran)
  launch_kernels(impl_->where, impl_->binding, index, index + 1, nullptr);
}

void CudaProgram::launch() {
  TF_CHECK(impl_->bound, "CudaProgram::launch before bind");
  const size_t n = impl_->kernels.size();
  prepare_launches(impl_->binding, impl_->input_strides, 0, n);
  impl_->host_launches_pending = true;  // (also where a launch throws: earlier ones ran)
  launch_kernels(impl_->where, impl_->binding, 0, n, nullptr);
}

BlockTimeline summarize_block_timeline(const std::string& kernel,
                                       const std::vector<uint64_t>& records, int64_t launched) {
  BlockTimeline t;
  t.kernel = kernel;
  t.launched = launched;
  constexpr int64_t w = kBlockTimelineWords;
  const int64_t n = std::min<int64_t>(launched, static_cast<int64_t>(records.size()) / w);
  std::vector<double> first, loop, after, second, whole;
  std::map<uint64_t, int> per_sm;
  uint64_t earliest = UINT64_MAX, last_start = 0, last_end = 0;
  auto us = [](uint64_t from, uint64_t to) { return static_cast<double>(to - from) * 1e-3; };
  for (int64_t b = 0; b < n; ++b) {
    const uint64_t* r = &records[static_cast<size_t>(w * b)];
    const uint64_t start = r[0], staged = r[1], loop_end = r[2], loop2_end = r[3], end = r[4];
    if (start == 0 || end < start) continue;  // no record (or a torn one)
    ++t.blocks;
    ++per_sm[r[5]];
    earliest = std::min(earliest, start);
    last_start = std::max(last_start, start);
    last_end = std::max(last_end, end);
    whole.push_back(us(start, end));
    const bool has_stage = staged >= start && staged <= end;
    const bool has_loop = loop_end >= start && loop_end <= end && (!has_stage || loop_end >= staged);
    if (has_stage) first.push_back(us(start, staged));
    if (has_loop) {
      loop.push_back(us(has_stage ? staged : start, loop_end));
      after.push_back(us(loop_end, end));
      if (loop2_end >= loop_end && loop2_end <= end) second.push_back(us(loop_end, loop2_end));
    }
  }
  if (t.blocks == 0) return t;
  t.sms = static_cast<int>(per_sm.size());
  for (const auto& [sm, count] : per_sm)
    t.max_blocks_on_an_sm = std::max(t.max_blocks_on_an_sm, count);
  t.start_spread_us = us(earliest, last_start);
  t.span_us = us(earliest, last_end);
  // (min, median, max: the timing's own summary, in its units)
  auto three = [](std::vector<double> v, double* out) {
    if (v.empty()) return;
    const cuda::Timing s = cuda::summarize_samples(std::move(v));
    out[0] = s.min_ms, out[1] = s.median_ms, out[2] = s.max_ms;
  };
  three(whole, t.block_us);
  three(first, t.first_stage_us);
  three(loop, t.loop_us);
  three(after, t.after_loop_us);
  three(second, t.second_loop_us);
  t.second_loop_blocks = static_cast<int64_t>(second.size());
  t.first_stage_blocks = static_cast<int64_t>(first.size());
  t.loop_blocks = static_cast<int64_t>(loop.size());
  return t;
}

std::string launch_shape_text(const CudaKernelStats& stats) {
  if (stats.persistent_blocks > 0)
    return fmt::format("{} threads x {} persistent blocks over {} tiles", stats.threads,
                       stats.persistent_blocks, stats.blocks);
  if (stats.blocks < 0) return fmt::format("{} threads x a grid set at launch", stats.threads);
  return fmt::format("{} threads x {} blocks", stats.threads, stats.blocks);
}

std::string format_block_timeline(const BlockTimeline& t) {
  if (t.blocks == 0)
    return fmt::format("{}: no block recorded (of {} launched)", t.kernel, t.launched);
  auto three = [](const double* v) {
    return fmt::format("{:.1f} / {:.1f} / {:.1f} us", v[0], v[1], v[2]);
  };
  std::string s = fmt::format(
      "{}: {} blocks{} on {} SMs (at most {} an SM), started within {:.2f} us; span {:.1f} us; "
      "a block {} (min / median / max)",
      t.kernel, t.blocks, t.blocks < t.launched ? fmt::format(" of {}", t.launched) : "", t.sms,
      t.max_blocks_on_an_sm, t.start_spread_us, t.span_us, three(t.block_us));
  if (t.first_stage_blocks > 0) s += "; start to the first stage landed " + three(t.first_stage_us);
  if (t.loop_blocks > 0)
    s += fmt::format("; {} to the first main loop's end {}, then to the block's end {}",
                     t.first_stage_blocks > 0 ? "then" : "start", three(t.loop_us),
                     three(t.after_loop_us));
  if (t.second_loop_blocks > 0)
    s += fmt::format("; the first main loop's end to the second's {} ({} blocks)",
                     three(t.second_loop_us), t.second_loop_blocks);
  return s;
}

std::vector<BlockTimeline> CudaProgram::block_timelines(
    const std::function<void()>& before_launch) {
  TF_CHECK(impl_->bound, "CudaProgram::block_timelines before bind");
  struct Global {
    size_t kernel;
    cuda::CUdeviceptr ptr;
    std::size_t bytes;
  };
  std::vector<Global> globals;
  const cuda::CudaLibraries& libs = device_.libs();
  device_.make_current();
  for (size_t i = 0; i < impl_->kernels.size(); ++i) {
    const Impl::Kernel& k = impl_->kernels[i];
    if (k.blas || k.code == nullptr || !k.code->block_timeline || !k.module) continue;
    Global g{i, 0, 0};
    g.ptr = k.module->global("tf_timeline", &g.bytes);
    cuda::check_cuda(libs, libs.cuMemsetD8_v2(g.ptr, 0, g.bytes), "cuMemsetD8");
    globals.push_back(g);
  }
  if (globals.empty()) return {};
  if (before_launch) before_launch();
  launch();
  check_status();
  std::vector<BlockTimeline> out;
  for (const Global& g : globals) {
    const Impl::Kernel& k = impl_->kernels[g.kernel];
    std::vector<uint64_t> records(g.bytes / sizeof(uint64_t));  // (kBlockTimelineWords a block)
    cuda::check_cuda(libs, libs.cuMemcpyDtoH_v2(records.data(), g.ptr, records.size() * 8),
                     "cuMemcpyDtoH");
    out.push_back(summarize_block_timeline(k.code->name, records, k.launched_blocks));
  }
  return out;
}

std::vector<size_t> CudaProgram::cublaslt_steps() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < impl_->kernels.size(); ++i)
    if (impl_->kernels[i].blas) out.push_back(i);
  return out;
}

cuda::CUdeviceptr CudaProgram::status_word(size_t reporter) const {
  return impl_->status->device() + reporter * sizeof(HostStatus);
}

cuda::CUdeviceptr CudaProgram::index_check_shape() const {
  return status_word(impl_->kernels.size() + 1);
}

void CudaProgram::poll_status() {
  // The words in launch order (status_word): the first that holds a report
  // is the first failure the device saw, as the CPU executor would stop at.
  // (Each kernel numbers its checks from 1, so the word says whose check an
  // id is: with one shared word, a later kernel's id 1 was read as the first
  // kernel's check and worded with its tensor and place.) An index error is
  // then the first in program order among the gathers that reported one:
  // the plan need not launch the gathers in program order (a GEMM whose
  // epilogue adds another GEMM's result runs second), and PyTorch, the
  // reference and the CPU executor name the earlier gather.
  volatile HostStatus* words = static_cast<volatile HostStatus*>(impl_->status->host());
  const size_t count = impl_->kernels.size() + 1;
  // A published report's code (> 0), 0 for none, or -1 for one still being
  // written: a kernel has claimed the word and is writing its values
  // (claim, values, __threadfence_system, code: tf_status.cuh); they land
  // within microseconds, else the report waits for the next poll.
  auto published = [&](size_t w) {
    int32_t code = words[w].code;
    for (int spin = 0; code == -1 && spin < 100000; ++spin) code = words[w].code;
    if (code > 0) std::atomic_thread_fence(std::memory_order_acquire);
    return code;
  };
  for (size_t w = 0; w < count; ++w) {
    int32_t code = published(w);
    if (code == 0) continue;
    if (code == -1) return;
    size_t chosen = w;
    // Of the index reports from here on, the one of the earliest gather.
    if (const std::optional<ValueId> first = reported_gather(w, code)) {
      ValueId earliest = *first;
      for (size_t later = w + 1; later < count; ++later) {
        const int32_t c = published(later);
        if (c <= 0) continue;
        const std::optional<ValueId> g = reported_gather(later, c);
        if (g && *g < earliest) {
          earliest = *g;
          chosen = later;
          code = c;
        }
      }
    }
    int64_t args[kStatusArgs];
    for (int i = 0; i < kStatusArgs; ++i) args[i] = words[chosen].args[i];
    // The index checks' report goes with the index tensor's shape, written
    // under the same claim (read before the word is cleared: a later
    // report may then overwrite it).
    int64_t shape[kIndexViewRank] = {};
    if (chosen == 0) {
      const volatile int64_t* reported = reinterpret_cast<const volatile int64_t*>(words + count);
      for (int d = 0; d < kIndexViewRank; ++d) shape[d] = reported[d];
    }
    // The later words' reports come from kernels that ran after this
    // failure (on what it left): cleared with it, as the CPU executor
    // stops at the first. A word still being written is left to the next
    // poll.
    // Only a published code is cleared, by a compare-and-swap: a kernel
    // that claims a word between the read and the write (0 -> -1) keeps
    // its claim (a plain write of 0 would erase it, and a second failing
    // thread could then claim the word and tear the first one's values).
    for (size_t later = w; later < count; ++later) {
      int32_t seen = words[later].code;
      if (seen > 0)
        __atomic_compare_exchange_n(const_cast<int32_t*>(&words[later].code), &seen, 0, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    }
    if (chosen == 0) throw_index_check_error(code, args, shape);
    for (const codegen::CudaCheck& c : impl_->kernels[chosen - 1].code->checks)
      if (c.id == code)
        throw UserError(ErrorKind::kIndex, format_check(c.message, args, c.num_args), c.loc);
    throw InternalError(fmt::format("kernel {} reported status {} that none of its checks has",
                                    impl_->kernels[chosen - 1].code->name, code));
  }
}

std::optional<ValueId> CudaProgram::reported_gather(size_t word, int32_t code) const {
  if (word == 0) {
    const int64_t check = static_cast<int64_t>(code) - kIndexCheckIdBase;
    if (check < 0 || check >= static_cast<int64_t>(impl_->index_checks.size())) return std::nullopt;
    return impl_->index_checks[static_cast<size_t>(check)].gather;
  }
  // A kernel's index check (code 1, lowering's bounds check of a gather)
  // carries its gather's place in the program: the gather is the Index
  // node there (the first, should two share it).
  const Graph& g = program_.graph;
  for (const codegen::CudaCheck& c : impl_->kernels[word - 1].code->checks) {
    if (c.id != code) continue;
    if (c.code != tir::kIndexBoundsCheckCode) return std::nullopt;
    for (ValueId v = 0; v < g.size(); ++v)
      if (g.node(v).kind == OpKind::Index && g.node(v).loc.line == c.loc.line &&
          g.node(v).loc.col == c.loc.col)
        return v;
    return std::nullopt;
  }
  return std::nullopt;
}

void CudaProgram::throw_index_check_error(int32_t code, const int64_t* args,
                                          const int64_t* shape) const {
  // The device-side check of an index no kernel reads (launch_index_checks):
  // value, row-major position, size; the index tensor's shape at the launch
  // that reported, as it reported it (a replayed graph's launch may be at
  // other sizes than any call since: nothing kept on the host decodes it).
  const int64_t check = static_cast<int64_t>(code) - kIndexCheckIdBase;
  TF_CHECK(check >= 0 && check < static_cast<int64_t>(impl_->index_checks.size()),
           fmt::format("the index checks reported status {} that none of them has", code));
  const ValueId gather = impl_->index_checks[static_cast<size_t>(check)].gather;
  const Graph& g = program_.graph;
  const size_t rank = g.node(g.node(gather).inputs[1]).shape.size();
  const Shape idx_shape(shape, shape + rank);
  throw_gather_index_error(g, gather, args[2], idx_shape, args[1], args[0]);
}

void CudaProgram::check_status(cuda::CUstream stream) {
  device_.make_current();
  device_.synchronize(stream);
  poll_status();
}

void CudaProgram::check_status() {
  device_.make_current();
  device_.synchronize();
  impl_->host_launches_pending = false;  // the context's work, the host path's included, is done
  poll_status();
}

std::vector<Tensor> CudaProgram::outputs() const {
  // (a bind that threw after freeing the previous buffers, e.g. out of
  // memory in its upload, leaves `where` at freed addresses)
  TF_CHECK(impl_->bound, "CudaProgram::outputs before bind");
  const Graph& g = program_.graph;
  device_.make_current();  // the copies below need the device's context
  std::vector<Tensor> outs;
  for (ValueId o : g.outputs()) {
    const Node& n = g.node(o);
    Tensor t = Tensor::empty(n.dtype, bound_shape(n, impl_->binding));
    // (a step's output, or a parameter returned as is: its input's copy)
    const cuda::CUdeviceptr src = impl_->where.at(static_cast<size_t>(o));
    TF_CHECK(src != 0, fmt::format("no step writes output %{}", o));
    const std::size_t bytes = static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype());
    if (bytes)
      cuda::check_cuda(device_.libs(), device_.libs().cuMemcpyDtoH_v2(t.data_ptr(), src, bytes),
                       "cuMemcpyDtoH");
    outs.push_back(t);
  }
  return outs;
}

std::vector<Tensor> CudaProgram::run(const std::vector<Tensor>& inputs, bool poison) {
  bind(inputs, poison);
  launch();
  check_status();
  return outputs();
}

std::optional<int64_t> override_dynamic_shared_bytes(std::string_view source) {
  constexpr std::string_view kKey = "// tilefuse-override: dynamic_shared_bytes=";
  const size_t at = source.find(kKey);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = source.substr(at + kKey.size());
  rest = rest.substr(0, std::min(rest.find('\n'), rest.size()));
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\r')) rest.remove_suffix(1);
  int64_t n = -1;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
  if (rest.empty() || ec != std::errc() || end != rest.data() + rest.size() || n < 0 ||
      n >= (int64_t{1} << 31))
    throw UserError(fmt::format(
        "TILEFUSE_OVERRIDE_SOURCE: `{}{}` is not a byte count (decimal, below 2^31)", kKey, rest));
  return n;
}

std::optional<std::string> read_override_source(const std::string& dir, const std::string& kernel) {
  const std::string path = (std::filesystem::path(dir) / (kernel + ".cu")).string();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;  // no override: the emitted source
    throw UserError(fmt::format("TILEFUSE_OVERRIDE_SOURCE: cannot read {}: {}", path,
                                std::strerror(errno)));
  }
  // (A FIFO would block the read, a device or /dev/zero never end.)
  if (!S_ISREG(st.st_mode))
    throw UserError(fmt::format("TILEFUSE_OVERRIDE_SOURCE: {} is not a regular file", path));
  constexpr off_t kMaxBytes = 64 << 20;
  if (st.st_size > kMaxBytes)
    throw UserError(fmt::format("TILEFUSE_OVERRIDE_SOURCE: {} is larger than 64 MiB", path));
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  if (in) ss << in.rdbuf();
  if (!in || in.bad())
    throw UserError(fmt::format("TILEFUSE_OVERRIDE_SOURCE: cannot read {}", path));
  return ss.str();
}

void dump_kernel_files(const std::string& dir, const std::string& kernel,
                       std::string_view source, std::string_view cubin) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw UserError(
        fmt::format("TILEFUSE_DUMP_CUBIN: cannot create the directory {}: {}", dir, ec.message()));
  for (const auto& [suffix, bytes] : {std::pair<const char*, const std::string_view*>{".cu", &source},
                                      {".cubin", &cubin}}) {
    const std::string path = (std::filesystem::path(dir) / (kernel + suffix)).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
    out.close();
    if (!out) throw UserError(fmt::format("TILEFUSE_DUMP_CUBIN: cannot write {}", path));
  }
}

}  // namespace tilefuse::driver
