// Dynamic loader for the CUDA libraries (libcuda and libnvrtc).
//
// tilefuse is built without CUDA headers and links no CUDA library: one
// binary runs with or without a GPU (DESIGN.md, "Backends and runtime"). The
// few driver-API and NVRTC types and entry points the CUDA runtime needs are
// declared here by hand, each with the documented signature, and resolved
// from the libraries with dlopen/dlsym at run time.
//
// Search order, per library (the first candidate that loads wins):
//   1. the environment override, a full path to the library file:
//      TILEFUSE_LIBCUDA for libcuda, TILEFUSE_LIBNVRTC for libnvrtc,
//      TILEFUSE_LIBCUBLASLT for libcublasLt (cublaslt.h). When set
//      it is the only candidate: if it is missing, a stub or unusable, the
//      load fails naming it (no silent fall-back to another library);
//   2. $CUDA_HOME, then $CUDA_PATH, each in lib64/, targets/x86_64-linux/lib/
//      and lib/;
//   3. the standard paths /usr/local/cuda/lib64,
//      /usr/local/cuda/targets/x86_64-linux/lib, /usr/lib/x86_64-linux-gnu,
//      /usr/lib and /usr/lib64;
//   4. the bare sonames, found by the dynamic linker (LD_LIBRARY_PATH,
//      ldconfig's cache).
// The file names are libcuda.so.1 for the driver, and libnvrtc.so.13 then
// libnvrtc.so.12 for NVRTC, libcublasLt.so.13 then libcublasLt.so.12 for
// cuBLASLt (in each directory, the newer first). A candidate
// that does not exist or that dlopen refuses is skipped and the next one is
// tried. Stub libraries (a path containing "/stubs/", as shipped with the
// toolkit for linking only) are never used. A library that loads but lacks
// one of the symbols below is an error naming its path and the symbol; the
// search stops there, since the library the user pointed at is broken.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tilefuse::cuda {

// ---- CUDA Driver API types (cuda.h; CUDA Driver API reference, "Data types
// used by CUDA driver"). Only their ABI matters here.
using CUresult = int;                // enum cudaError_enum; CUDA_SUCCESS == 0
using CUdevice = int;                // typedef int CUdevice
using CUdevice_attribute = int;      // enum CUdevice_attribute
using CUdeviceptr = std::uint64_t;   // unsigned long long on 64-bit hosts
using CUcontext = struct CUctx_st*;  // opaque handles
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

constexpr CUresult kCudaSuccess = 0;                            // CUDA_SUCCESS
constexpr CUdevice_attribute kAttrComputeCapabilityMajor = 75;  // ..._COMPUTE_CAPABILITY_MAJOR
constexpr CUdevice_attribute kAttrComputeCapabilityMinor = 76;  // ..._COMPUTE_CAPABILITY_MINOR
constexpr CUdevice_attribute kAttrMultiprocessorCount = 16;     // ..._MULTIPROCESSOR_COUNT
constexpr CUdevice_attribute kAttrMaxSharedPerBlockOptin =
    97;  // ..._MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
// CUfunction_attribute values (cuda.h).
constexpr int kFuncAttrSharedSizeBytes = 1;            // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
constexpr int kFuncAttrLocalSizeBytes = 3;             // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
constexpr int kFuncAttrNumRegs = 4;                    // CU_FUNC_ATTRIBUTE_NUM_REGS
constexpr int kFuncAttrMaxDynamicSharedSizeBytes = 8;  // ..._MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr CUdevice_attribute kAttrL2CacheSize = 38;    // ..._L2_CACHE_SIZE (bytes)
constexpr CUdevice_attribute kAttrMaxGridDimX = 5;     // ..._MAX_GRID_DIM_X (blocks)

// ---- NVRTC types (nvrtc.h; NVRTC documentation, "Error Handling" and
// "General Information Query").
using nvrtcResult = int;                     // enum nvrtcResult; NVRTC_SUCCESS == 0
using nvrtcProgram = struct _nvrtcProgram*;  // opaque program handle

constexpr nvrtcResult kNvrtcSuccess = 0;  // NVRTC_SUCCESS

// The entry points, resolved with dlsym. The _v2 names are the ABI symbols
// that cuda.h maps the unsuffixed names to on 64-bit hosts.
struct CudaLibraries {
  // -- libcuda (CUDA Driver API reference; section in brackets).
  // [Initialization] CUresult cuInit(unsigned int Flags)
  CUresult (*cuInit)(unsigned int flags) = nullptr;
  // [Version Management] CUresult cuDriverGetVersion(int* driverVersion)
  CUresult (*cuDriverGetVersion)(int* driver_version) = nullptr;
  // [Error Handling] CUresult cuGetErrorString(CUresult error, const char** pStr)
  CUresult (*cuGetErrorString)(CUresult error, const char** str) = nullptr;
  // [Device Management] CUresult cuDeviceGetCount(int* count)
  CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  // [Device Management] CUresult cuDeviceGet(CUdevice* device, int ordinal)
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  // [Device Management] CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib,
  //                                                   CUdevice dev)
  CUresult (*cuDeviceGetAttribute)(int* value, CUdevice_attribute attrib, CUdevice dev) = nullptr;
  // [Device Management] CUresult cuDeviceGetName(char* name, int len, CUdevice dev)
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice dev) = nullptr;
  // [Primary Context Management] CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx,
  //                                                                CUdevice dev)
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* ctx, CUdevice dev) = nullptr;
  // [Context Management] CUresult cuCtxSetCurrent(CUcontext ctx)
  CUresult (*cuCtxSetCurrent)(CUcontext ctx) = nullptr;
  // [Context Management] CUresult cuCtxSynchronize(void)
  CUresult (*cuCtxSynchronize)() = nullptr;
  // [Module Management] CUresult cuModuleLoadData(CUmodule* module, const void* image)
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image) = nullptr;
  // [Module Management] CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod,
  //                                                  const char* name)
  CUresult (*cuModuleGetFunction)(CUfunction* func, CUmodule mod, const char* name) = nullptr;
  // [Module Management] CUresult cuModuleGetGlobal(CUdeviceptr* dptr, size_t* bytes,
  //                                                CUmodule hmod, const char* name)
  CUresult (*cuModuleGetGlobal_v2)(CUdeviceptr* ptr, std::size_t* bytes, CUmodule mod,
                                   const char* name) = nullptr;
  // [Execution Control] CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX,
  //     unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
  //     unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes,
  //     CUstream hStream, void** kernelParams, void** extra)
  CUresult (*cuLaunchKernel)(CUfunction f, unsigned int grid_x, unsigned int grid_y,
                             unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                             unsigned int block_z, unsigned int shared_mem_bytes, CUstream stream,
                             void** kernel_params, void** extra) = nullptr;
  // [Execution Control] CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib,
  //                                                 CUfunction hfunc)
  CUresult (*cuFuncGetAttribute)(int* value, int attrib, CUfunction f) = nullptr;
  // [Execution Control] CUresult cuFuncSetAttribute(CUfunction hfunc,
  //                                                 CUfunction_attribute attrib, int value)
  CUresult (*cuFuncSetAttribute)(CUfunction f, int attrib, int value) = nullptr;
  // [Occupancy] CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks,
  //     CUfunction func, int blockSize, size_t dynamicSMemSize)
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int* num_blocks, CUfunction f,
                                                          int block_size,
                                                          std::size_t dynamic_smem) = nullptr;
  // [Memory Management] CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytesize)
  CUresult (*cuMemAlloc_v2)(CUdeviceptr* dptr, std::size_t bytes) = nullptr;
  // [Memory Management] CUresult cuMemFree(CUdeviceptr dptr)
  CUresult (*cuMemFree_v2)(CUdeviceptr dptr) = nullptr;
  // [Memory Management] CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void* srcHost,
  //                                           size_t ByteCount)
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr dst, const void* src, std::size_t bytes) = nullptr;
  // [Memory Management] CUresult cuMemcpyDtoH(void* dstHost, CUdeviceptr srcDevice,
  //                                           size_t ByteCount)
  CUresult (*cuMemcpyDtoH_v2)(void* dst, CUdeviceptr src, std::size_t bytes) = nullptr;
  // [Memory Management] CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
  CUresult (*cuMemsetD8_v2)(CUdeviceptr dst, unsigned char value, std::size_t count) = nullptr;
  // [Event Management] CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags)
  CUresult (*cuEventCreate)(CUevent* event, unsigned int flags) = nullptr;
  // [Event Management] CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
  CUresult (*cuEventRecord)(CUevent event, CUstream stream) = nullptr;
  // [Event Management] CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart,
  //                                                CUevent hEnd)
  CUresult (*cuEventElapsedTime)(float* ms, CUevent start, CUevent end) = nullptr;

  // -- libnvrtc (NVRTC documentation, section "API Reference").
  // [General Information Query] nvrtcResult nvrtcVersion(int* major, int* minor)
  nvrtcResult (*nvrtcVersion)(int* major, int* minor) = nullptr;
  // [Error Handling] const char* nvrtcGetErrorString(nvrtcResult result)
  const char* (*nvrtcGetErrorString)(nvrtcResult result) = nullptr;
  // [Compilation] nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char* src,
  //     const char* name, int numHeaders, const char* const* headers,
  //     const char* const* includeNames)
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram* prog, const char* src, const char* name,
                                    int num_headers, const char* const* headers,
                                    const char* const* include_names) = nullptr;
  // [Compilation] nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions,
  //                                               const char* const* options)
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram prog, int num_options,
                                     const char* const* options) = nullptr;
  // [Compilation] nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t* logSizeRet)
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram prog, std::size_t* size) = nullptr;
  // [Compilation] nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char* log)
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram prog, char* log) = nullptr;
  // [Compilation] nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t* cubinSizeRet)
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram prog, std::size_t* size) = nullptr;
  // [Compilation] nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* cubin)
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram prog, char* cubin) = nullptr;
  // [Compilation] nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog)
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram* prog) = nullptr;

  // Where each library was loaded from (the candidate that succeeded) and the
  // dlopen handles. The handles are closed when the tables are destroyed; the
  // process-wide tables of load_cuda_libraries() never are.
  std::string libcuda_path;
  std::string libnvrtc_path;
  void* libcuda_handle = nullptr;
  void* libnvrtc_handle = nullptr;

  CudaLibraries() = default;
  CudaLibraries(const CudaLibraries&) = delete;
  CudaLibraries& operator=(const CudaLibraries&) = delete;
  ~CudaLibraries();
};

// kCublasLt is searched like the others (TILEFUSE_LIBCUBLASLT; file names
// libcublasLt.so.13 then libcublasLt.so.12) but is not part of CudaLibraries:
// cublaslt.h opens it on its own with open_library_handle().
enum class Library { kCuda, kNvrtc, kCublasLt };

// Reads an environment variable: nullptr (or "") when it is unset. The
// default is std::getenv; tests pass a fake environment.
using EnvGetter = std::function<const char*(const char*)>;

// The reading environment of the real process (std::getenv).
EnvGetter process_env();

// "libcuda", "libnvrtc" or "libcublasLt".
const char* library_name(Library lib);

// The environment variable that overrides the search for `lib`.
const char* override_variable(Library lib);

// Every path tried for `lib`, in the documented search order, without
// duplicates and without stub libraries. Absolute paths are files; the
// entries without a '/' are sonames left to the dynamic linker.
std::vector<std::string> candidate_paths(Library lib, const EnvGetter& env);

// Opens `lib` alone from the first usable candidate of the search order above
// (the override authoritative, stub libraries skipped) and resolves no
// symbols. Returns the dlopen handle (RTLD_NOW | RTLD_LOCAL; the caller owns
// it) and sets `path` to where it was loaded from; or returns nullptr with
// `why_not` (if given) one sentence naming every path tried and why each
// failed, and the variable that overrides the search.
void* open_library_handle(Library lib, const EnvGetter& env, std::string* path,
                          std::string* why_not);

// Resolves the NVRTC entry points of `libs` from `handle` (a libnvrtc opened
// with open_library_handle) and records it as libs.libnvrtc_handle and
// `path`. Returns false with `why_not` naming the library and the first
// missing symbol; the handle is then the caller's to close.
bool resolve_nvrtc(void* handle, const std::string& path, CudaLibraries& libs,
                   std::string* why_not);

// Opens both libraries and resolves every entry point, searching with the
// given environment, without caching: libcuda first, and libnvrtc only when
// libcuda loaded (no driver, no GPU: the compiler is not mapped for
// nothing). Returns nullptr when a library is missing or broken, with
// `why_not` (if given) a sentence saying every path tried and why each
// failed.
std::unique_ptr<CudaLibraries> open_cuda_libraries(const EnvGetter& env, std::string* why_not);

// The process-wide tables: loaded on the first call with the process
// environment, then returned as they are (thread-safe). nullptr when they
// could not be loaded, with `why_not` the reason (the same on every call).
const CudaLibraries* load_cuda_libraries(std::string* why_not = nullptr);

// True when the libraries load, cuInit(0) succeeds and there is at least one
// CUDA device; otherwise false with `why_not` saying why. Checked once per
// process.
bool cuda_available(std::string* why_not = nullptr);

// The driver's message for `result` ("unknown CUDA error <n>" if it has none).
std::string cuda_error_string(const CudaLibraries& libs, CUresult result);

}  // namespace tilefuse::cuda
