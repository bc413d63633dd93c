// The CUDA device through the driver API (CUDA Driver API reference; the
// section of each call is named where it is used): the primary context of
// device 0, memory, copies, modules, launches and events.
//
// Every failing driver call throws: UserError for conditions the user can act
// on (out of memory, no binary for this GPU, too many resources for a launch),
// InternalError otherwise. The message names the call and quotes
// cuGetErrorString.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cuda/loader.h"

namespace tilefuse::cuda {

// Throws for `rc` != CUDA_SUCCESS, naming `call`.
void check_cuda(const CudaLibraries& libs, CUresult rc, const char* call);

class Device;

// Device memory (cuMemAlloc / cuMemFree), freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const Device& device, std::size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  CUdeviceptr ptr() const { return ptr_; }
  std::size_t size() const { return bytes_; }
  // The address as a kernel argument slot (pass &buffer.arg() in void*[]).
  CUdeviceptr& arg() { return ptr_; }

  // Synchronous copies (cuMemcpyHtoD / cuMemcpyDtoH); `bytes` <= size().
  void copy_from_host(const void* src, std::size_t bytes);
  void copy_to_host(void* dst, std::size_t bytes) const;
  // cuMemsetD8 over the whole buffer.
  void memset(unsigned char value);

  template <typename T>
  void upload(const std::vector<T>& v) {
    copy_from_host(v.data(), v.size() * sizeof(T));
  }
  template <typename T>
  std::vector<T> download(std::size_t count) const {
    std::vector<T> v(count);
    copy_to_host(v.data(), count * sizeof(T));
    return v;
  }

 private:
  void release() noexcept;
  const CudaLibraries* libs_ = nullptr;
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

struct LaunchDims {
  unsigned x = 1, y = 1, z = 1;
};

// A kernel of a loaded module (cuModuleGetFunction).
class Function {
 public:
  Function() = default;
  Function(const CudaLibraries* libs, CUfunction f, std::string name)
      : libs_(libs), f_(f), name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  CUfunction handle() const { return f_; }

  // cuLaunchKernel on `stream` (nullptr: the context's default stream);
  // `args` holds one pointer per kernel parameter, pointing at its value.
  // Asynchronous: errors raised by the kernel itself surface at the next
  // Device::synchronize().
  void launch(LaunchDims grid, LaunchDims block, unsigned dynamic_shared_bytes, void** args,
              CUstream stream = nullptr) const;
  // cuFuncGetAttribute: registers per thread, static shared and local
  // (spill/stack) bytes per thread as loaded.
  int attribute(int attrib) const;
  // Lets a launch use `bytes` of dynamic shared memory (above 48 KiB needs
  // the opt-in: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
  void set_max_dynamic_shared(int bytes) const;
  // cuOccupancyMaxActiveBlocksPerMultiprocessor: resident blocks per SM.
  int max_active_blocks_per_sm(int block_threads, std::size_t dynamic_shared_bytes) const;

 private:
  const CudaLibraries* libs_ = nullptr;
  CUfunction f_ = nullptr;
  std::string name_;
};

// A module loaded from a cubin image (cuModuleLoadData), unloaded on
// destruction.
class Module {
 public:
  Module(const Device& device, const std::vector<char>& cubin);
  Module(Module&& other) noexcept;
  Module& operator=(Module&&) = delete;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module();

  Function function(const std::string& name) const;
  // The address of the module's __device__ variable `name` and its size in
  // bytes (cuModuleGetGlobal); throws CudaError when the module has none.
  CUdeviceptr global(const std::string& name, std::size_t* bytes) const;

 private:
  const CudaLibraries* libs_ = nullptr;
  CUmodule mod_ = nullptr;
};

// Where the memory at a host-side address lives, as the driver sees it
// (cuPointerGetAttribute, "Unified Addressing"): CU_POINTER_ATTRIBUTE_IS_MANAGED,
// _MEMORY_TYPE and _DEVICE_ORDINAL.
struct PointerInfo {
  enum class Kind {
    kNotCuda,  // the driver does not know it: pageable host memory (or no driver)
    kHost,     // page-locked host memory (cuMemHostAlloc, cudaHostRegister)
    kDevice,   // device memory of the GPU `device`
    kManaged,  // managed (unified) memory, reachable from the host and the GPUs
  };
  Kind kind = Kind::kNotCuda;
  int device = -1;  // the GPU's ordinal for kDevice and kManaged, else -1
};

// Queries `p` through `libs` (a libcuda loaded by load_cuda_libraries()).
// A pointer the driver does not know, or a driver without
// cuPointerGetAttribute, is kNotCuda.
PointerInfo pointer_info(const CudaLibraries& libs, const void* p);

// The same without loading anything: through the libcuda this process has
// already loaded (tilefuse's, or PyTorch's), kNotCuda when none is loaded or
// initialized (then no CUDA memory exists in the process). For checking a
// CPU tensor's pointer without opening the driver for a CPU call.
PointerInfo pointer_info_if_loaded(const void* p);

// An event (cuEventCreate: with default flags, a timing event; without
// `timing`, CU_EVENT_DISABLE_TIMING, the cheaper kind that only marks
// completion), destroyed on destruction.
class Event {
 public:
  explicit Event(const Device& device, bool timing = true);
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  // cuEventRecord on `stream` (nullptr: the default stream).
  void record(CUstream stream = nullptr);
  // cuEventSynchronize: waits until the work recorded before it completed
  // (at once if it was never recorded). Throws (check_cuda) what the driver
  // says: CUDA_ERROR_CAPTURED_EVENT where the last record was into a CUDA
  // graph capture still going, CUDA_ERROR_INVALID_VALUE once that capture
  // ended (nothing runs there to wait for): record into a capture only an
  // event that is never waited for.
  void synchronize() const;
  // Milliseconds from `start` to this event (cuEventElapsedTime), after
  // waiting for this event to complete.
  float elapsed_ms_since(const Event& start) const;

 private:
  const CudaLibraries* libs_ = nullptr;
  CUevent ev_ = nullptr;
};

// A device (ordinal `ordinal`, device 0 by default) with its primary
// context made current on the calling thread (cuDevicePrimaryCtxRetain +
// cuCtxSetCurrent): the context PyTorch and the CUDA runtime use too, so
// memory and streams are shared. The context is released on destruction.
// Throws UserError when CUDA is unavailable (cuda_available()) or there is
// no such device.
class Device {
 public:
  explicit Device(int ordinal = 0);
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device();

  const CudaLibraries& libs() const { return *libs_; }
  const std::string& name() const { return name_; }
  int cc_major() const { return cc_major_; }
  int cc_minor() const { return cc_minor_; }
  // "sm_90a" for compute capability 9.0 (the arch-specific target), "sm_XY"
  // otherwise.
  std::string arch() const;
  int sm_count() const { return sm_count_; }
  // Shared memory a block may opt in to (bytes).
  int max_shared_per_block_optin() const { return max_smem_optin_; }
  // The most blocks a launch's grid may have in x (CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
  // 2^31 - 1 on every GPU tilefuse runs on).
  int64_t max_grid_x() const { return max_grid_x_; }
  std::size_t total_memory() const { return total_memory_; }
  // cuMemGetInfo in this device's context ("Memory Management"): the bytes
  // of device memory free now and in all, as the driver counts them (in its
  // allocation granularity, so a small allocation may move `free` by a page
  // or not at all). Throws as check_cuda, and InternalError where the
  // driver lacks the entry point.
  struct MemoryInfo {
    std::size_t free = 0, total = 0;
  };
  MemoryInfo memory_info() const;

  // Makes the primary context current on the calling thread (inside a
  // CurrentContextGuard's scope, the context it replaces is restored when
  // the guard goes).
  void make_current() const;
  // cuCtxSynchronize; a kernel fault raised since the last check throws here.
  void synchronize() const;
  int ordinal() const { return ordinal_; }

  // Stream operations (CUDA Driver API, "Stream Management" and "Memory
  // Management"); `stream` nullptr is the default stream.
  // cuStreamSynchronize.
  void synchronize(CUstream stream) const;
  // cuStreamIsCapturing: whether `stream` is being captured into a CUDA
  // graph (false when the driver lacks the entry point). The legacy stream
  // (nullptr) counts as capturing while a blocking stream of the context is:
  // the driver then answers CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, since any
  // work on it would join that capture, and the capture goes on.
  bool is_capturing(CUstream stream) const;
  CUcontext context() const { return ctx_; }
  // cuMemcpyDtoDAsync of `bytes` on `stream`.
  void copy_async(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes, CUstream stream) const;
  // Whether a launch on `stream` runs in this device's primary context, where
  // tilefuse loads its kernels (cuStreamGetCtx; nullptr, the default stream,
  // always does; true when the driver lacks the entry point).
  bool owns_stream(CUstream stream) const;

 private:
  const CudaLibraries* libs_ = nullptr;
  int ordinal_ = 0;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  std::string name_;
  int cc_major_ = 0, cc_minor_ = 0, sm_count_ = 0, max_smem_optin_ = 0;
  int64_t max_grid_x_ = 0;
  std::size_t total_memory_ = 0;
};

// The calling thread's current CUDA context as it was, put back when the
// guard goes out of scope (also when an exception leaves it): the context
// that was current (none included) before the first Device::make_current()
// in its scope replaced it. An entry point that the caller calls with a
// context of its own current declares one first: a PyTorch user's current
// device is the thread's current context (cudaGetDevice reads it), so a
// call on cuda:1 must not leave cuda:1 current. Guards nest (each puts back
// what was current at its own first switch); one where nothing is made
// current (a CPU call) loads and calls nothing. Per thread; on the stack.
// Cost: the first make_current() in its scope asks the driver once what is
// current (cuCtxGetCurrent); later ones know it (every switch in the scope
// goes through make_current), so where the caller already had the device's
// context current (PyTorch's case) a whole call adds that one query and no
// switch, and otherwise one cuCtxSetCurrent per switch plus the one that
// puts the caller's back.
class CurrentContextGuard {
 public:
  CurrentContextGuard() noexcept;
  ~CurrentContextGuard();
  CurrentContextGuard(const CurrentContextGuard&) = delete;
  CurrentContextGuard& operator=(const CurrentContextGuard&) = delete;

 private:
  friend class Device;
  CurrentContextGuard* outer_;           // the enclosing guard of this thread
  const CudaLibraries* libs_ = nullptr;  // set once `saved_` holds the context to restore
  CUcontext saved_ = nullptr;
  bool known_ = false;  // whether `current_` is the thread's current context
  CUcontext current_ = nullptr;
};

// The calling thread's stream capture mode set to relaxed for the scope
// (cuThreadExchangeStreamCaptureMode, set and put back; nothing where the
// driver lacks it): under a capture in CU_STREAM_CAPTURE_MODE_GLOBAL (any
// thread's) or THREAD_LOCAL (this thread's), the "potentially unsafe" calls
// a teardown makes (cuMemFree, cuMemFreeHost, cuModuleUnload) would fail
// and invalidate the capture; relaxed, they run and it goes on. For
// destructors, which must neither throw nor break a caller's capture.
class RelaxedCaptureMode {
 public:
  explicit RelaxedCaptureMode(const CudaLibraries& libs) noexcept;
  ~RelaxedCaptureMode();
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  const CudaLibraries* libs_ = nullptr;  // null: nothing to put back
  int saved_ = 0;                        // the mode before (a CUstreamCaptureMode)
};

// Page-locked host memory mapped into the device's address space
// (cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE,
// "Memory Management"): kernels write it through device(), and the host
// reads host() without a copy and without waiting for the device — how a
// status word is read without a synchronization per launch. Zeroed on
// allocation; freed (cuMemFreeHost) on destruction.
class MappedHostBuffer {
 public:
  MappedHostBuffer(const Device& device, std::size_t bytes);
  MappedHostBuffer(const MappedHostBuffer&) = delete;
  MappedHostBuffer& operator=(const MappedHostBuffer&) = delete;
  ~MappedHostBuffer();
  void* host() const { return host_; }
  CUdeviceptr device() const { return device_; }

 private:
  const CudaLibraries* libs_ = nullptr;
  void* host_ = nullptr;
  CUdeviceptr device_ = 0;
};

// A TMA tensor map (CUtensorMap: 128 opaque bytes, 64-byte aligned), passed
// by pointer in a launch's argument array for a `const __grid_constant__
// tf::TmaDesc` kernel parameter.
struct alignas(64) TensorMap {
  unsigned char bytes[128];
};

// cuTensorMapEncodeTiled (CUDA Driver API, "Tensor Map Object Management")
// for the tensor at device address `base`: elements of `elem_bytes` bytes
// (an unsigned type: the map copies bytes), `dims` elements per dim and
// `box` the box extents, innermost first; `strides` the byte strides of
// dims 1 .. rank - 1 (multiples of 16; the innermost dim is contiguous);
// rank 1 to 5; `swizzle_bytes` 0, 64 or 128 (CU_TENSOR_MAP_SWIZZLE_64B or
// _128B; the box's inner extent is then that many bytes or, for 128, a 128-byte
// strip). Element
// strides 1, no interleave, L2 promotion 256 B, out-of-bounds elements read
// as zeros. Throws UserError when the driver lacks the entry point, and the
// driver's error (check_cuda) when it refuses the map.
TensorMap encode_tensor_map(const Device& device, CUdeviceptr base, int elem_bytes,
                            const std::vector<std::int64_t>& dims,
                            const std::vector<std::int64_t>& strides, const std::vector<int>& box,
                            int swizzle_bytes);

}  // namespace tilefuse::cuda
