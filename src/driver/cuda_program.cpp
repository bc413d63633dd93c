#include "driver/cuda_program.h"

#include <fmt/format.h>

#include <chrono>
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
#include "runtime/cache/kernel_cache.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/loader.h"

namespace tilefuse::driver {
namespace {

// tf::Status (tf_status.cuh): int code, int pad, long long args[4].
struct HostStatus {
  int32_t code;
  int32_t pad;
  int64_t args[4];
};
static_assert(sizeof(HostStatus) == 40);

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

}  // namespace

cuda::Device& default_device() {
  static std::once_flag once;
  static std::unique_ptr<cuda::Device> device;
  std::call_once(once, [] { device = std::make_unique<cuda::Device>(); });
  device->make_current();
  return *device;
}

cuda::CompileOptions cuda_compile_options(const std::string& arch) {
  cuda::CompileOptions o;
  o.arch = arch;
  o.extra = {"-std=c++17", "--ptxas-options=-v"};
  return o;
}

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
    const codegen::CudaKernel* code = nullptr;
    std::vector<cuda::CUdeviceptr> arg_values;
    std::vector<cuda::TensorMap> tensor_maps;  // its TMA maps, over the bound buffers
    std::vector<void*> args;
    // cuBLASLt instead of our kernel: C = A @ B over these values.
    std::unique_ptr<cuda::CublasLtGemm> blas;
    ValueId blas_a = -1, blas_b = -1, blas_c = -1;
  };
  std::vector<Kernel> kernels;
  std::map<ValueId, cuda::DeviceBuffer> memory;
  std::optional<cuda::DeviceBuffer> status;
  bool bound = false;
};

namespace {

// The cuBLASLt problem of a plain GEMM step (see CudaProgramOptions), or
// nullopt when the step is not plain.
std::optional<cuda::GemmProblem> plain_gemm(const Graph& g, const KernelStep& step) {
  if (step.kind != StepKind::kGemm || !step.a.nodes.empty() || !step.b.nodes.empty() || step.bias ||
      !step.epilogue.empty() || step.gemm.a_is_vector || step.gemm.b_is_vector)
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
    if (plain_gemm(program.graph, program.kernels[i].lowered.step)) out.push_back(i);
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
      if (std::optional<cuda::GemmProblem> p = plain_gemm(program.graph, ck.lowered.step)) {
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
    for (const tir::KernelParam& p : ck.kernel.params)
      TF_CHECK(p.is_buffer(), "kernel " + ck.kernel.name + ": scalar params are not supported");
    CudaKernelStats st;
    st.name = code.name;
    const auto t0 = std::chrono::steady_clock::now();
    // Debugging aid: TILEFUSE_OVERRIDE_SOURCE=DIR compiles DIR/<kernel>.cu,
    // when it exists, instead of the emitted source (same entry and params).
    std::string source = code.source;
    if (const char* dir = std::getenv("TILEFUSE_OVERRIDE_SOURCE"); dir && *dir) {
      std::ifstream in(std::filesystem::path(dir) / (code.name + ".cu"));
      if (in) {
        std::stringstream ss;
        ss << in.rdbuf();
        source = ss.str();
        std::fprintf(stderr, "tilefuse: kernel %s from %s/%s.cu (TILEFUSE_OVERRIDE_SOURCE)\n",
                     code.name.c_str(), dir, code.name.c_str());
      }
    }
    cuda::CompiledKernel bin =
        cache::compile_cuda_cached(source, code.name, cuda_compile_options(arch), &st.from_cache);
    st.compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    st.usage = bin.usage;
    // Debugging aid: TILEFUSE_DUMP_CUBIN=DIR writes each kernel's source and
    // cubin there (for cuobjdump --dump-sass).
    if (const char* dir = std::getenv("TILEFUSE_DUMP_CUBIN"); dir && *dir) {
      std::filesystem::create_directories(dir);
      std::ofstream(std::filesystem::path(dir) / (code.name + ".cu")) << source;
      std::ofstream(std::filesystem::path(dir) / (code.name + ".cubin"), std::ios::binary)
          .write(bin.cubin.data(), static_cast<std::streamsize>(bin.cubin.size()));
    }
    Impl::Kernel k;
    k.module = std::make_unique<cuda::Module>(device, bin.cubin);
    k.function = k.module->function(code.name);
    k.bindings = ck.lowered.bindings;
    for (const ScratchBuffer& s : ck.lowered.scratch) {
      const std::size_t bytes =
          static_cast<std::size_t>(shape_numel(s.shape)) * dtype_size(s.dtype);
      k.scratch.emplace_back(device, std::max<std::size_t>(bytes, 16));
      k.scratch.back().memset(s.zeroed ? 0 : 0xFF);  // else NaN bytes: a missed write shows
    }
    k.code = &code;
    if (code.dynamic_shared_bytes > device.max_shared_per_block_optin())
      throw UserError(
          fmt::format("kernel {} needs {} bytes of shared memory; the GPU allows {} per block",
                      code.name, code.dynamic_shared_bytes, device.max_shared_per_block_optin()));
    if (code.dynamic_shared_bytes > 48 * 1024)
      k.function.set_max_dynamic_shared(static_cast<int>(code.dynamic_shared_bytes));
    st.registers = k.function.attribute(cuda::kFuncAttrNumRegs);
    st.local_bytes = k.function.attribute(cuda::kFuncAttrLocalSizeBytes);
    st.dynamic_shared_bytes = code.dynamic_shared_bytes;
    st.threads = code.num_threads;
    st.blocks = code.grid;
    st.blocks_per_sm = k.function.max_active_blocks_per_sm(
        code.num_threads, static_cast<std::size_t>(code.dynamic_shared_bytes));
    st.occupancy = st.blocks_per_sm * code.num_threads / 32 / 64.0;
    stats_.push_back(st);
    impl_->kernels.push_back(std::move(k));
  }
  impl_->status.emplace(device, sizeof(HostStatus));
  impl_->status->memset(0);
}

CudaProgram::~CudaProgram() = default;

void CudaProgram::bind(const std::vector<Tensor>& inputs, bool poison) {
  const Graph& g = program_.graph;
  check_inputs(g, inputs);
  device_.make_current();
  impl_->memory.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor c = inputs[i].contiguous();
    const std::size_t bytes = static_cast<std::size_t>(c.numel()) * dtype_size(c.dtype());
    cuda::DeviceBuffer b(device_, std::max<std::size_t>(bytes, 16));
    if (bytes) b.copy_from_host(c.data_ptr(), bytes);
    impl_->memory.emplace(g.parameters()[i], std::move(b));
  }
  for (const CompiledKernel& ck : program_.kernels) {
    const Node& out = g.node(ck.lowered.step.output);
    const std::size_t bytes =
        static_cast<std::size_t>(shape_numel(out.shape)) * dtype_size(out.dtype);
    cuda::DeviceBuffer b(device_, std::max<std::size_t>(bytes, 16));
    if (poison) b.memset(0xFF);
    impl_->memory.insert_or_assign(ck.lowered.step.output, std::move(b));
  }
  for (Impl::Kernel& k : impl_->kernels) {
    if (k.blas) continue;
    k.arg_values.clear();
    for (ValueId v : k.bindings) {
      auto it = impl_->memory.find(v);
      TF_CHECK(it != impl_->memory.end(),
               fmt::format("kernel {} reads %{} before any step wrote it", k.code->name, v));
      k.arg_values.push_back(it->second.ptr());
    }
    for (const cuda::DeviceBuffer& s : k.scratch) k.arg_values.push_back(s.ptr());
    k.arg_values.push_back(impl_->status->ptr());
    k.tensor_maps.clear();
    for (const codegen::CudaTensorMap& m : k.code->tensor_maps) {
      TF_CHECK(m.param >= 0 && m.param < static_cast<int>(k.bindings.size()),
               "a tensor map of a parameter the kernel does not bind");
      k.tensor_maps.push_back(cuda::encode_tensor_map(device_, k.arg_values[m.param],
                                                      m.elem_bytes, m.dims, m.strides, m.box,
                                                      m.swizzle_bytes));
    }
    k.args.clear();
    for (cuda::CUdeviceptr& a : k.arg_values) k.args.push_back(&a);
    for (cuda::TensorMap& m : k.tensor_maps) k.args.push_back(&m);
  }
  impl_->bound = true;
}

void CudaProgram::autotune_cublaslt(const cuda::TimingOptions& options) {
  TF_CHECK(impl_->bound, "CudaProgram::autotune_cublaslt before bind");
  for (Impl::Kernel& k : impl_->kernels)
    if (k.blas && k.blas->algorithm_count() > 1)
      k.blas->autotune(impl_->memory.at(k.blas_a).ptr(), impl_->memory.at(k.blas_b).ptr(),
                       impl_->memory.at(k.blas_c).ptr(), options);
  for (size_t i = 0; i < impl_->kernels.size(); ++i)
    if (impl_->kernels[i].blas) stats_[i].name = impl_->kernels[i].blas->describe();
}

void CudaProgram::launch_step(size_t index) {
  TF_CHECK(impl_->bound, "CudaProgram::launch before bind");
  TF_CHECK(index < impl_->kernels.size(), "CudaProgram::launch_step: no such step");
  Impl::Kernel& k = impl_->kernels[index];
  if (!first_launch_) first_launch_ = std::chrono::steady_clock::now();
  if (k.blas) {
    k.blas->run(impl_->memory.at(k.blas_a).ptr(), impl_->memory.at(k.blas_b).ptr(),
                impl_->memory.at(k.blas_c).ptr());
    return;
  }
  if (k.code->grid == 0) return;  // an empty grid (M or N is 0)
  // A persistent kernel's blocks take the tiles in turn: one block an SM.
  const int64_t blocks =
      k.code->persistent ? std::min<int64_t>(k.code->grid, device_.sm_count()) : k.code->grid;
  k.function.launch({static_cast<unsigned>(blocks), 1, 1},
                    {static_cast<unsigned>(k.code->num_threads), 1, 1},
                    static_cast<unsigned>(k.code->dynamic_shared_bytes), k.args.data());
}

void CudaProgram::launch() {
  for (size_t i = 0; i < impl_->kernels.size(); ++i) launch_step(i);
}

std::vector<size_t> CudaProgram::cublaslt_steps() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < impl_->kernels.size(); ++i)
    if (impl_->kernels[i].blas) out.push_back(i);
  return out;
}

void CudaProgram::check_status() {
  device_.synchronize();
  HostStatus s{};
  impl_->status->copy_to_host(&s, sizeof s);
  if (s.code == 0) return;
  impl_->status->memset(0);
  for (const Impl::Kernel& k : impl_->kernels)
    for (const codegen::CudaCheck& c : k.code->checks)
      if (c.id == s.code) throw UserError(format_check(c.message, s.args, c.num_args));
  throw InternalError(fmt::format("a kernel reported status {} that no check has", s.code));
}

std::vector<Tensor> CudaProgram::outputs() const {
  const Graph& g = program_.graph;
  std::vector<Tensor> outs;
  for (ValueId o : g.outputs()) {
    const Node& n = g.node(o);
    Tensor t = Tensor::empty(n.dtype, n.shape);
    auto it = impl_->memory.find(o);
    TF_CHECK(it != impl_->memory.end(), fmt::format("no step writes output %{}", o));
    const std::size_t bytes = static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype());
    if (bytes) it->second.copy_to_host(t.data_ptr(), bytes);
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

}  // namespace tilefuse::driver
