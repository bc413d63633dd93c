// The CUDA device through the driver API (see device.h).
#include "runtime/cuda/device.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "core/error.h"

namespace tilefuse::cuda {
namespace {

// Driver entry points used only for teardown and queries that the loader's
// table does not hold; resolved from the same libcuda handle. Each may be
// null (then the matching cleanup is skipped).
struct ExtraEntryPoints {
  // [Device Management] CUresult cuDeviceTotalMem(size_t* bytes, CUdevice dev)
  CUresult (*cuDeviceTotalMem_v2)(std::size_t* bytes, CUdevice dev) = nullptr;
  // [Memory Management] CUresult cuMemGetInfo(size_t* free, size_t* total)
  CUresult (*cuMemGetInfo_v2)(std::size_t* free, std::size_t* total) = nullptr;
  // [Primary Context Management] CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
  CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice dev) = nullptr;
  // [Module Management] CUresult cuModuleUnload(CUmodule hmod)
  CUresult (*cuModuleUnload)(CUmodule mod) = nullptr;
  // [Event Management] CUresult cuEventDestroy(CUevent hEvent)
  CUresult (*cuEventDestroy_v2)(CUevent event) = nullptr;
  // [Event Management] CUresult cuEventSynchronize(CUevent hEvent)
  CUresult (*cuEventSynchronize)(CUevent event) = nullptr;
  // [Tensor Map Object Management] CUresult cuTensorMapEncodeTiled(CUtensorMap* tensorMap,
  //     CUtensorMapDataType tensorDataType, cuuint32_t tensorRank, void* globalAddress,
  //     const cuuint64_t* globalDim, const cuuint64_t* globalStrides, const cuuint32_t* boxDim,
  //     const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
  //     CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
  //     CUtensorMapFloatOOBfill oobFill)   (CUDA 12.0+; the enums are C enums: int)
  CUresult (*cuTensorMapEncodeTiled)(void* map, int dtype, unsigned rank, void* address,
                                     const std::uint64_t* dims, const std::uint64_t* strides,
                                     const unsigned* box, const unsigned* element_strides,
                                     int interleave, int swizzle, int l2_promotion,
                                     int oob_fill) = nullptr;
  // [Stream Management] CUresult cuStreamSynchronize(CUstream hStream)
  CUresult (*cuStreamSynchronize)(CUstream stream) = nullptr;
  // [Stream Management] CUresult cuStreamIsCapturing(CUstream hStream,
  //     CUstreamCaptureStatus* captureStatus)   (the status is a C enum: int)
  CUresult (*cuStreamIsCapturing)(CUstream stream, int* status) = nullptr;
  // [Memory Management] CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice,
  //     CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
  CUresult (*cuMemcpyDtoDAsync_v2)(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes,
                                   CUstream stream) = nullptr;
  // [Memory Management] CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags)
  CUresult (*cuMemHostAlloc)(void** p, std::size_t bytes, unsigned flags) = nullptr;
  // [Memory Management] CUresult cuMemHostGetDevicePointer(CUdeviceptr* pdptr, void* p,
  //     unsigned int Flags)
  CUresult (*cuMemHostGetDevicePointer_v2)(CUdeviceptr* dptr, void* p, unsigned flags) = nullptr;
  // [Memory Management] CUresult cuMemFreeHost(void* p)
  CUresult (*cuMemFreeHost)(void* p) = nullptr;
  // [Unified Addressing] CUresult cuPointerGetAttribute(void* data,
  //     CUpointer_attribute attribute, CUdeviceptr ptr)   (the attribute is a C enum: int)
  CUresult (*cuPointerGetAttribute)(void* data, int attribute, CUdeviceptr ptr) = nullptr;
  // [Stream Management] CUresult cuStreamGetCtx(CUstream hStream, CUcontext* pctx)
  CUresult (*cuStreamGetCtx)(CUstream stream, CUcontext* ctx) = nullptr;
  // [Context Management] CUresult cuCtxGetCurrent(CUcontext* pctx)
  CUresult (*cuCtxGetCurrent)(CUcontext* ctx) = nullptr;
  // [Stream Management] CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode)
  //     (the mode is a C enum: int)
  CUresult (*cuThreadExchangeStreamCaptureMode)(int* mode) = nullptr;
};

template <typename Fn>
void resolve(void* handle, Fn*& slot, const char* name) {
  slot = reinterpret_cast<Fn*>(dlsym(handle, name));
}

const ExtraEntryPoints& extra(const CudaLibraries& libs) {
  static const ExtraEntryPoints e = [&] {
    ExtraEntryPoints x;
    if (libs.libcuda_handle == nullptr) return x;
    resolve(libs.libcuda_handle, x.cuDeviceTotalMem_v2, "cuDeviceTotalMem_v2");
    resolve(libs.libcuda_handle, x.cuMemGetInfo_v2, "cuMemGetInfo_v2");
    resolve(libs.libcuda_handle, x.cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease_v2");
    resolve(libs.libcuda_handle, x.cuModuleUnload, "cuModuleUnload");
    resolve(libs.libcuda_handle, x.cuEventDestroy_v2, "cuEventDestroy_v2");
    resolve(libs.libcuda_handle, x.cuEventSynchronize, "cuEventSynchronize");
    resolve(libs.libcuda_handle, x.cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled");
    resolve(libs.libcuda_handle, x.cuStreamSynchronize, "cuStreamSynchronize");
    resolve(libs.libcuda_handle, x.cuStreamIsCapturing, "cuStreamIsCapturing");
    resolve(libs.libcuda_handle, x.cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync_v2");
    resolve(libs.libcuda_handle, x.cuMemHostAlloc, "cuMemHostAlloc");
    resolve(libs.libcuda_handle, x.cuMemHostGetDevicePointer_v2, "cuMemHostGetDevicePointer_v2");
    resolve(libs.libcuda_handle, x.cuMemFreeHost, "cuMemFreeHost");
    resolve(libs.libcuda_handle, x.cuPointerGetAttribute, "cuPointerGetAttribute");
    resolve(libs.libcuda_handle, x.cuStreamGetCtx, "cuStreamGetCtx");
    resolve(libs.libcuda_handle, x.cuCtxGetCurrent, "cuCtxGetCurrent");
    resolve(libs.libcuda_handle, x.cuThreadExchangeStreamCaptureMode,
            "cuThreadExchangeStreamCaptureMode");
    return x;
  }();
  return e;
}

// CUpointer_attribute and CUmemorytype values (cuda.h).
constexpr int kPointerAttrMemoryType = 2;     // CU_POINTER_ATTRIBUTE_MEMORY_TYPE (unsigned)
constexpr int kPointerAttrIsManaged = 8;      // CU_POINTER_ATTRIBUTE_IS_MANAGED (unsigned)
constexpr int kPointerAttrDeviceOrdinal = 9;  // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL (int)
constexpr unsigned kMemoryTypeHost = 1;       // CU_MEMORYTYPE_HOST
constexpr unsigned kMemoryTypeDevice = 2;     // CU_MEMORYTYPE_DEVICE

using PointerGetAttributeFn = CUresult (*)(void*, int, CUdeviceptr);

PointerInfo query_pointer(PointerGetAttributeFn get, const void* p) {
  PointerInfo info;
  if (get == nullptr || p == nullptr) return info;
  const auto ptr = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
  // A pointer the driver did not allocate, map or register is
  // CUDA_ERROR_INVALID_VALUE; an uninitialized driver knows no pointer.
  unsigned type = 0;
  if (get(&type, kPointerAttrMemoryType, ptr) != kCudaSuccess) return info;
  unsigned managed = 0;
  if (get(&managed, kPointerAttrIsManaged, ptr) != kCudaSuccess) managed = 0;
  int ordinal = -1;
  if (get(&ordinal, kPointerAttrDeviceOrdinal, ptr) != kCudaSuccess) ordinal = -1;
  if (managed) {
    info.kind = PointerInfo::Kind::kManaged;
  } else if (type == kMemoryTypeDevice) {
    info.kind = PointerInfo::Kind::kDevice;
  } else if (type == kMemoryTypeHost) {
    info.kind = PointerInfo::Kind::kHost;
    ordinal = -1;
  } else {
    return info;
  }
  info.device = ordinal;
  return info;
}

// CUresult codes (cuda.h, enum cudaError_enum).
constexpr CUresult kErrorStreamCaptureImplicit = 906;  // CUDA_ERROR_STREAM_CAPTURE_IMPLICIT

// CUresult codes the user can act on (cuda.h, enum cudaError_enum).
bool is_user_facing(CUresult rc) {
  switch (rc) {
    case 2:    // CUDA_ERROR_OUT_OF_MEMORY
    case 100:  // CUDA_ERROR_NO_DEVICE
    case 209:  // CUDA_ERROR_NO_BINARY_FOR_GPU
    case 222:  // CUDA_ERROR_UNSUPPORTED_PTX_VERSION
    case 701:  // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    case 702:  // CUDA_ERROR_LAUNCH_TIMEOUT
    case 803:  // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
    case 804:  // CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
    // The caller's CUDA graph capture forbids the call: a launch on the
    // legacy stream while a blocking stream captures, or on a capture
    // already invalidated.
    case 900:  // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
    case 901:  // CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
    case kErrorStreamCaptureImplicit:
      return true;
    default:
      return false;
  }
}

}  // namespace

PointerInfo pointer_info(const CudaLibraries& libs, const void* p) {
  return query_pointer(extra(libs).cuPointerGetAttribute, p);
}

PointerInfo pointer_info_if_loaded(const void* p) {
  static std::atomic<PointerGetAttributeFn> cached{nullptr};
  PointerGetAttributeFn get = cached.load(std::memory_order_acquire);
  if (get == nullptr) {
    // RTLD_NOLOAD: a handle only if the process has loaded libcuda already
    // (by soname, wherever from). Once found, the handle stays open so the
    // entry point stays valid; until then each call looks again (PyTorch
    // loads the driver lazily).
    void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (handle == nullptr) return {};
    get = reinterpret_cast<PointerGetAttributeFn>(dlsym(handle, "cuPointerGetAttribute"));
    if (get == nullptr) {
      dlclose(handle);
      return {};
    }
    cached.store(get, std::memory_order_release);
  }
  return query_pointer(get, p);
}

void check_cuda(const CudaLibraries& libs, CUresult rc, const char* call) {
  if (rc == kCudaSuccess) return;
  const std::string msg = std::string(call) + " failed: " + cuda_error_string(libs, rc);
  if (is_user_facing(rc)) throw UserError(msg);
  throw InternalError(msg);
}

// ---- Device

Device::Device(int ordinal) : ordinal_(ordinal) {
  std::string why_not;
  if (!cuda_available(&why_not)) throw UserError("No CUDA device: " + why_not);
  libs_ = load_cuda_libraries();
  const CudaLibraries& l = *libs_;
  // [Device Management] cuDeviceGetCount, cuDeviceGet, cuDeviceGetName, cuDeviceGetAttribute.
  int count = 0;
  check_cuda(l, l.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count)
    throw UserError("no CUDA device " + std::to_string(ordinal) + " (the machine has " +
                    std::to_string(count) + ")");
  check_cuda(l, l.cuDeviceGet(&dev_, ordinal), "cuDeviceGet");
  char name[256] = {};
  check_cuda(l, l.cuDeviceGetName(name, sizeof name - 1, dev_), "cuDeviceGetName");
  name_ = name;
  check_cuda(l, l.cuDeviceGetAttribute(&cc_major_, kAttrComputeCapabilityMajor, dev_),
             "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
  check_cuda(l, l.cuDeviceGetAttribute(&cc_minor_, kAttrComputeCapabilityMinor, dev_),
             "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
  check_cuda(l, l.cuDeviceGetAttribute(&sm_count_, kAttrMultiprocessorCount, dev_),
             "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  check_cuda(l, l.cuDeviceGetAttribute(&max_smem_optin_, kAttrMaxSharedPerBlockOptin, dev_),
             "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
  int max_grid_x = 0;
  check_cuda(l, l.cuDeviceGetAttribute(&max_grid_x, kAttrMaxGridDimX, dev_),
             "cuDeviceGetAttribute(MAX_GRID_DIM_X)");
  max_grid_x_ = max_grid_x;
  if (auto* total_mem = extra(l).cuDeviceTotalMem_v2) {
    check_cuda(l, total_mem(&total_memory_, dev_), "cuDeviceTotalMem");
  }
  // [Primary Context Management] the primary context is shared with every
  // other user of device 0 in the process (CUDA runtime, cuBLAS).
  check_cuda(l, l.cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
  make_current();
}

Device::~Device() {
  if (ctx_ == nullptr) return;
  libs_->cuCtxSynchronize();  // errors here are dropped: destructors do not throw
  if (auto* release = extra(*libs_).cuDevicePrimaryCtxRelease_v2) release(dev_);
}

std::string Device::arch() const {
  std::string a = "sm_" + std::to_string(cc_major_) + std::to_string(cc_minor_);
  if (cc_major_ == 9 && cc_minor_ == 0) a += "a";
  return a;
}

namespace {
// The innermost CurrentContextGuard of this thread (null: none).
thread_local CurrentContextGuard* t_context_guard = nullptr;
}  // namespace

CurrentContextGuard::CurrentContextGuard() noexcept : outer_(t_context_guard) {
  t_context_guard = this;
}

CurrentContextGuard::~CurrentContextGuard() {
  t_context_guard = outer_;
  if (!libs_) return;              // nothing was switched in this scope
  libs_->cuCtxSetCurrent(saved_);  // errors dropped: destructors do not throw
  if (outer_) {
    // What the enclosing guard's scope has current again.
    outer_->known_ = true;
    outer_->current_ = saved_;
  }
}

void Device::make_current() const {
  // Under a guard: the first call asks the driver what is current (nullptr:
  // no context), and the first switch saves that for the guard to put back;
  // a context already current is not made current again. (A driver without
  // cuCtxGetCurrent, older than any tilefuse runs on, restores nothing.)
  CurrentContextGuard* guard = t_context_guard;
  if (guard) {
    if (!guard->known_) {
      auto* get = extra(*libs_).cuCtxGetCurrent;
      if (!get) {
        check_cuda(*libs_, libs_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
        return;
      }
      CUcontext current = nullptr;
      check_cuda(*libs_, get(&current), "cuCtxGetCurrent");
      guard->current_ = current;
      guard->known_ = true;
    }
    if (guard->current_ == ctx_) return;  // already current: nothing to switch
    if (!guard->libs_) {
      guard->saved_ = guard->current_;
      guard->libs_ = libs_;
    }
    // (Not known until the switch succeeds.)
    guard->known_ = false;
    check_cuda(*libs_, libs_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
    guard->current_ = ctx_;
    guard->known_ = true;
    return;
  }
  check_cuda(*libs_, libs_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
}

RelaxedCaptureMode::RelaxedCaptureMode(const CudaLibraries& libs) noexcept {
  auto* exchange = extra(libs).cuThreadExchangeStreamCaptureMode;
  int mode = 2;  // CU_STREAM_CAPTURE_MODE_RELAXED
  if (exchange && exchange(&mode) == kCudaSuccess) {
    libs_ = &libs;
    saved_ = mode;
  }
}

RelaxedCaptureMode::~RelaxedCaptureMode() {
  if (libs_) extra(*libs_).cuThreadExchangeStreamCaptureMode(&saved_);  // errors dropped
}

void Device::synchronize(CUstream stream) const {
  auto* sync = extra(*libs_).cuStreamSynchronize;
  if (!sync) throw UserError("the CUDA driver has no cuStreamSynchronize");
  check_cuda(*libs_, sync(stream), "cuStreamSynchronize");
}

bool Device::is_capturing(CUstream stream) const {
  auto* capturing = extra(*libs_).cuStreamIsCapturing;
  if (!capturing) return false;
  int status = 0;  // CU_STREAM_CAPTURE_STATUS_NONE
  const CUresult rc = capturing(stream, &status);
  // The legacy stream while a blocking stream captures: any work on it would
  // join that capture (which this query leaves going).
  if (rc == kErrorStreamCaptureImplicit) return true;
  check_cuda(*libs_, rc, "cuStreamIsCapturing");
  return status != 0;
}

bool Device::owns_stream(CUstream stream) const {
  auto* get_ctx = extra(*libs_).cuStreamGetCtx;
  if (stream == nullptr || get_ctx == nullptr) return true;
  CUcontext ctx = nullptr;
  check_cuda(*libs_, get_ctx(stream, &ctx), "cuStreamGetCtx");
  return ctx == ctx_;
}

void Device::copy_async(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes,
                        CUstream stream) const {
  if (bytes == 0) return;
  auto* copy = extra(*libs_).cuMemcpyDtoDAsync_v2;
  if (!copy) throw UserError("the CUDA driver has no cuMemcpyDtoDAsync");
  check_cuda(*libs_, copy(dst, src, bytes, stream), "cuMemcpyDtoDAsync");
}

MappedHostBuffer::MappedHostBuffer(const Device& device, std::size_t bytes)
    : libs_(&device.libs()) {
  const ExtraEntryPoints& x = extra(*libs_);
  if (!x.cuMemHostAlloc || !x.cuMemHostGetDevicePointer_v2 || !x.cuMemFreeHost)
    throw UserError("the CUDA driver has no cuMemHostAlloc");
  device.make_current();
  // CU_MEMHOSTALLOC_PORTABLE (1) | CU_MEMHOSTALLOC_DEVICEMAP (2).
  check_cuda(*libs_, x.cuMemHostAlloc(&host_, bytes, 0x1 | 0x2), "cuMemHostAlloc");
  std::memset(host_, 0, bytes);
  check_cuda(*libs_, x.cuMemHostGetDevicePointer_v2(&device_, host_, 0),
             "cuMemHostGetDevicePointer");
}

MappedHostBuffer::~MappedHostBuffer() {
  if (host_) extra(*libs_).cuMemFreeHost(host_);  // errors dropped: destructors do not throw
}

void Device::synchronize() const {
  check_cuda(*libs_, libs_->cuCtxSynchronize(), "cuCtxSynchronize");
}

Device::MemoryInfo Device::memory_info() const {
  auto* get = extra(*libs_).cuMemGetInfo_v2;
  if (get == nullptr) throw InternalError("the CUDA driver has no cuMemGetInfo_v2");
  make_current();
  MemoryInfo m;
  check_cuda(*libs_, get(&m.free, &m.total), "cuMemGetInfo");
  return m;
}

// ---- DeviceBuffer

DeviceBuffer::DeviceBuffer(const Device& device, std::size_t bytes)
    : libs_(&device.libs()), bytes_(bytes) {
  // [Memory Management] cuMemAlloc of 0 bytes is an error; allocate one.
  check_cuda(*libs_, libs_->cuMemAlloc_v2(&ptr_, bytes == 0 ? 1 : bytes), "cuMemAlloc");
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : libs_(other.libs_), ptr_(other.ptr_), bytes_(other.bytes_) {
  other.ptr_ = 0;
  other.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    libs_ = other.libs_;
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    other.ptr_ = 0;
    other.bytes_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  release();
}

void DeviceBuffer::release() noexcept {
  if (ptr_ != 0 && libs_ != nullptr) libs_->cuMemFree_v2(ptr_);
  ptr_ = 0;
}

void DeviceBuffer::copy_from_host(const void* src, std::size_t bytes) {
  TF_CHECK(bytes <= bytes_, "copy of " + std::to_string(bytes) + " bytes into a buffer of " +
                                std::to_string(bytes_));
  if (bytes == 0) return;
  check_cuda(*libs_, libs_->cuMemcpyHtoD_v2(ptr_, src, bytes), "cuMemcpyHtoD");
}

void DeviceBuffer::copy_to_host(void* dst, std::size_t bytes) const {
  TF_CHECK(bytes <= bytes_, "copy of " + std::to_string(bytes) + " bytes from a buffer of " +
                                std::to_string(bytes_));
  if (bytes == 0) return;
  check_cuda(*libs_, libs_->cuMemcpyDtoH_v2(dst, ptr_, bytes), "cuMemcpyDtoH");
}

void DeviceBuffer::memset(unsigned char value) {
  if (bytes_ == 0) return;
  check_cuda(*libs_, libs_->cuMemsetD8_v2(ptr_, value, bytes_), "cuMemsetD8");
}

// ---- Module and Function

Module::Module(const Device& device, const std::vector<char>& cubin) : libs_(&device.libs()) {
  TF_CHECK(!cubin.empty(), "an empty cubin");
  // [Module Management] cuModuleLoadData takes the image in host memory.
  check_cuda(*libs_, libs_->cuModuleLoadData(&mod_, cubin.data()), "cuModuleLoadData");
}

Module::Module(Module&& other) noexcept : libs_(other.libs_), mod_(other.mod_) {
  other.mod_ = nullptr;
}

Module::~Module() {
  if (mod_ == nullptr) return;
  if (auto* unload = extra(*libs_).cuModuleUnload) unload(mod_);
}

CUdeviceptr Module::global(const std::string& name, std::size_t* bytes) const {
  CUdeviceptr p = 0;
  std::size_t n = 0;
  const std::string call = "cuModuleGetGlobal(\"" + name + "\")";
  check_cuda(*libs_, libs_->cuModuleGetGlobal_v2(&p, &n, mod_, name.c_str()), call.c_str());
  if (bytes) *bytes = n;
  return p;
}

Function Module::function(const std::string& name) const {
  CUfunction f = nullptr;
  const std::string call = "cuModuleGetFunction(\"" + name + "\")";
  check_cuda(*libs_, libs_->cuModuleGetFunction(&f, mod_, name.c_str()), call.c_str());
  return Function(libs_, f, name);
}

int Function::attribute(int attrib) const {
  int v = 0;
  check_cuda(*libs_, libs_->cuFuncGetAttribute(&v, attrib, f_), "cuFuncGetAttribute");
  return v;
}

void Function::set_max_dynamic_shared(int bytes) const {
  check_cuda(*libs_, libs_->cuFuncSetAttribute(f_, kFuncAttrMaxDynamicSharedSizeBytes, bytes),
             "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

int Function::max_active_blocks_per_sm(int block_threads, std::size_t dynamic_shared_bytes) const {
  int n = 0;
  check_cuda(*libs_,
             libs_->cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f_, block_threads,
                                                                dynamic_shared_bytes),
             "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return n;
}

void Function::launch(LaunchDims grid, LaunchDims block, unsigned dynamic_shared_bytes,
                      void** args, CUstream stream) const {
  // [Execution Control] cuLaunchKernel on `stream` (0: the context's default
  // stream), parameters through kernelParams, no `extra`.
  const CUresult rc = libs_->cuLaunchKernel(f_, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                            dynamic_shared_bytes, stream, args, nullptr);
  if (rc != kCudaSuccess) check_cuda(*libs_, rc, ("cuLaunchKernel(" + name_ + ")").c_str());
}

// ---- Event

Event::Event(const Device& device, bool timing) : libs_(&device.libs()) {
  // [Event Management] flags 0 = CU_EVENT_DEFAULT (timing enabled), 2 =
  // CU_EVENT_DISABLE_TIMING.
  check_cuda(*libs_, libs_->cuEventCreate(&ev_, timing ? 0 : 2), "cuEventCreate");
}

Event::~Event() {
  if (ev_ == nullptr) return;
  if (auto* destroy = extra(*libs_).cuEventDestroy_v2) destroy(ev_);
}

void Event::record(CUstream stream) {
  check_cuda(*libs_, libs_->cuEventRecord(ev_, stream), "cuEventRecord");
}

void Event::synchronize() const {
  if (auto* sync = extra(*libs_).cuEventSynchronize) {
    check_cuda(*libs_, sync(ev_), "cuEventSynchronize");
  } else {
    check_cuda(*libs_, libs_->cuCtxSynchronize(), "cuCtxSynchronize");
  }
}

float Event::elapsed_ms_since(const Event& start) const {
  synchronize();
  float ms = 0.0f;
  check_cuda(*libs_, libs_->cuEventElapsedTime(&ms, start.ev_, ev_), "cuEventElapsedTime");
  return ms;
}

}  // namespace tilefuse::cuda

namespace tilefuse::cuda {

TensorMap encode_tensor_map(const Device& device, CUdeviceptr base, int elem_bytes,
                            const std::vector<std::int64_t>& dims,
                            const std::vector<std::int64_t>& strides, const std::vector<int>& box,
                            int swizzle_bytes) {
  const CudaLibraries& libs = device.libs();
  const ExtraEntryPoints& x = extra(libs);
  if (x.cuTensorMapEncodeTiled == nullptr)
    throw UserError(
        "the CUDA driver has no cuTensorMapEncodeTiled (TMA needs driver 525 or newer); pass "
        "--cuda-option tma=0 to issue cp.async instead");
  const std::size_t rank = dims.size();
  TF_CHECK(rank >= 1 && rank <= 5 && strides.size() + 1 == rank && box.size() == rank,
           "encode_tensor_map: rank");
  // CU_TENSOR_MAP_DATA_TYPE_UINT8 / UINT16 / UINT32 / UINT64 (the map copies bytes).
  int dtype = 0;
  switch (elem_bytes) {
    case 1: dtype = 0; break;
    case 2: dtype = 1; break;
    case 4: dtype = 2; break;
    case 8: dtype = 4; break;
    default: TF_CHECK(false, "encode_tensor_map: element size");
  }
  std::uint64_t d[5], st[4];
  unsigned bx[5], es[5];
  for (std::size_t i = 0; i < rank; ++i) {
    d[i] = static_cast<std::uint64_t>(dims[i]);
    bx[i] = static_cast<unsigned>(box[i]);
    es[i] = 1;
  }
  for (std::size_t i = 0; i + 1 < rank; ++i) st[i] = static_cast<std::uint64_t>(strides[i]);
  // CU_TENSOR_MAP_SWIZZLE_NONE = 0, _64B = 2, _128B = 3; CU_TENSOR_MAP_INTERLEAVE_NONE = 0;
  // CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3; CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0 (zeros).
  TF_CHECK(swizzle_bytes == 0 || swizzle_bytes == 64 || swizzle_bytes == 128,
           "encode_tensor_map: swizzle");
  const int swizzle = swizzle_bytes == 128 ? 3 : swizzle_bytes == 64 ? 2 : 0;
  TensorMap m{};
  const CUresult rc = x.cuTensorMapEncodeTiled(m.bytes, dtype, static_cast<unsigned>(rank),
                                               reinterpret_cast<void*>(base), d, st, bx, es, 0,
                                               swizzle, 3, 0);
  check_cuda(libs, rc, "cuTensorMapEncodeTiled");
  return m;
}

}  // namespace tilefuse::cuda
