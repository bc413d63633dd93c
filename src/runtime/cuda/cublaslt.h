// cuBLASLt as the GEMM baseline of `tilefuse bench` (DESIGN.md, "Backends
// and runtime": libcublasLt is opened with dlopen, like libcuda and libnvrtc).
//
// libcublasLt is searched in the order of loader.h (Library::kCublasLt):
// TILEFUSE_LIBCUBLASLT (authoritative when set), $CUDA_HOME / $CUDA_PATH,
// /usr/local/cuda/lib64, /usr/local/cuda/targets/x86_64-linux/lib, the
// standard library directories, then the sonames libcublasLt.so.13 and
// libcublasLt.so.12. The few types, enum values and entry points used are
// declared here by hand from cublasLt.h / cublas_api.h / library_types.h
// (cuBLAS documentation, "Using the cuBLASLt API"); tilefuse is built
// without CUDA headers.
//
// Row-major GEMMs through a column-major library: a row-major X[r, c] with
// row stride c is, read column-major, X^T ([c, r] with leading dimension c).
// So C[M,N] = A[M,K] @ B[K,N] (row-major) is computed as the column-major
// C^T[N,M] = B^T[N,K] @ A^T[K,M]: cuBLASLt's "A" is our B (N x K, ld N), its
// "B" is our A (K x M, ld K), its C/D is our C (N x M, ld N), both
// operations CUBLAS_OP_N, all layouts CUBLASLT_ORDER_COL. This is the call
// PyTorch makes for a contiguous `x @ w`, so the figure compares with the
// "cuBLAS, no gather" column of ../shared/bench/README.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/loader.h"
#include "runtime/cuda/timing.h"

namespace tilefuse::cuda {

// ---- cuBLAS / cuBLASLt types (cublasLt.h, cublas_api.h, library_types.h).
// Enums are int-sized; only their ABI matters here.
using cublasStatus_t = int;  // enum cublasStatus_t; CUBLAS_STATUS_SUCCESS == 0
using cublasLtHandle_t = struct cublasLtContext*;
using cublasLtMatmulDesc_t = struct CublasLtMatmulDescOpaque*;      // cublasLtMatmulDescOpaque_t*
using cublasLtMatrixLayout_t = struct CublasLtMatrixLayoutOpaque*;  // cublasLtMatrixLayoutOpaque_t*
using cublasLtMatmulPreference_t =
    struct CublasLtMatmulPrefOpaque*;  // cublasLtMatmulPreferenceOpaque_t*
using cudaStream_t = CUstream;         // struct CUstream_st*

// cublasLtMatmulAlgo_t: a semi-opaque algorithm descriptor.
struct cublasLtMatmulAlgo_t {
  std::uint64_t data[8];
};

// cublasLtMatmulHeuristicResult_t, as cublasLtMatmulAlgoGetHeuristic fills it.
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  std::size_t workspaceSize;  // bytes the algorithm needs
  cublasStatus_t state;       // the other fields are valid only when 0
  float wavesCount;
  int reserved[4];
};

// The entry points (cuBLAS documentation, "cuBLASLt API Reference"; each
// signature as in cublasLt.h of CUDA 13, unchanged since CUDA 11).
struct CublasLtLibrary {
  // cublasStatus_t cublasLtCreate(cublasLtHandle_t* lightHandle)
  cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t* handle) = nullptr;
  // cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle)
  cublasStatus_t (*cublasLtDestroy)(cublasLtHandle_t handle) = nullptr;
  // size_t cublasLtGetVersion(void)
  std::size_t (*cublasLtGetVersion)() = nullptr;
  // const char* cublasLtGetStatusString(cublasStatus_t status)
  const char* (*cublasLtGetStatusString)(cublasStatus_t status) = nullptr;
  // cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc,
  //     cublasComputeType_t computeType, cudaDataType_t scaleType)
  cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t* desc, int compute_type,
                                             int scale_type) = nullptr;
  // cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc)
  cublasStatus_t (*cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t desc) = nullptr;
  // cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
  //     cublasLtMatmulDescAttributes_t attr, const void* buf, size_t sizeInBytes)
  cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t desc, int attr,
                                                   const void* buf, std::size_t size) = nullptr;
  // cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout,
  //     cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld)
  cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t* layout, int type,
                                               std::uint64_t rows, std::uint64_t cols,
                                               std::int64_t ld) = nullptr;
  // cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout)
  cublasStatus_t (*cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t layout) = nullptr;
  // cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
  //     cublasLtMatrixLayoutAttribute_t attr, const void* buf, size_t sizeInBytes)
  cublasStatus_t (*cublasLtMatrixLayoutSetAttribute)(cublasLtMatrixLayout_t layout, int attr,
                                                     const void* buf, std::size_t size) = nullptr;
  // cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref)
  cublasStatus_t (*cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference_t* pref) = nullptr;
  // cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)
  cublasStatus_t (*cublasLtMatmulPreferenceDestroy)(cublasLtMatmulPreference_t pref) = nullptr;
  // cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
  //     cublasLtMatmulPreferenceAttributes_t attr, const void* buf, size_t sizeInBytes)
  cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t pref, int attr,
                                                         const void* buf,
                                                         std::size_t size) = nullptr;
  // cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle,
  //     cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
  //     cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,
  //     cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t preference,
  //     int requestedAlgoCount, cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
  //     int* returnAlgoCount)
  cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic)(
      cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
      cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
      cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t* results,
      int* returned) = nullptr;
  // cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle,
  //     cublasLtMatmulDesc_t computeDesc, const void* alpha, const void* A,
  //     cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
  //     const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
  //     cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
  //     size_t workspaceSizeInBytes, cudaStream_t stream)
  cublasStatus_t (*cublasLtMatmul)(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                   const void* alpha, const void* a, cublasLtMatrixLayout_t a_desc,
                                   const void* b, cublasLtMatrixLayout_t b_desc, const void* beta,
                                   const void* c, cublasLtMatrixLayout_t c_desc, void* d,
                                   cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo,
                                   void* workspace, std::size_t workspace_bytes,
                                   cudaStream_t stream) = nullptr;

  std::string path;        // where libcublasLt was loaded from
  void* handle = nullptr;  // the dlopen handle, closed on destruction

  CublasLtLibrary() = default;
  CublasLtLibrary(const CublasLtLibrary&) = delete;
  CublasLtLibrary& operator=(const CublasLtLibrary&) = delete;
  ~CublasLtLibrary();
};

// Opens libcublasLt with the given environment (no caching) and resolves
// every entry point above. nullptr when it is missing or lacks a symbol, with
// `why_not` (if given) naming every path tried, or the library and the
// missing symbols.
std::unique_ptr<CublasLtLibrary> open_cublaslt(const EnvGetter& env, std::string* why_not);

// The process-wide library, opened on the first call with the process
// environment (thread-safe), never closed. nullptr with `why_not` when it
// cannot be loaded. Needs no GPU and no libcuda.
const CublasLtLibrary* load_cublaslt(std::string* why_not = nullptr);

// True when load_cublaslt() succeeds; otherwise false with `why_not` saying
// why. Says nothing about a GPU: see cuda_available().
bool cublaslt_available(std::string* why_not = nullptr);

// "major.minor.patch" of the loaded cuBLASLt (cublasLtGetVersion, encoded
// major*10000 + minor*100 + patch), or "" when it is not loaded.
std::string cublaslt_version();

// One GEMM problem, row-major and contiguous: for each batch b,
//   C_b[M,N] = A_b[M,K] @ B_b[K,N],
// with A_b at a + b*stride_a elements (and likewise B, C). The strides are in
// elements; 0 broadcasts one matrix to every batch (A or B only). With the
// defaults (-1) the batches are packed: stride_a = M*K, stride_b = K*N,
// stride_c = M*N.
struct GemmProblem {
  std::int64_t m = 0, n = 0, k = 0;
  int batch = 1;
  std::int64_t stride_a = -1, stride_b = -1, stride_c = -1;
};

struct CublasLtOptions {
  // The workspace cuBLASLt may use (CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES),
  // allocated on the device by the constructor. 32 MiB is what PyTorch uses
  // on Hopper.
  std::size_t workspace_bytes = std::size_t{32} << 20;
  // How many algorithms to ask cublasLtMatmulAlgoGetHeuristic for (>= 1).
  // The first (the heuristic's top-1) is selected; autotune() can time them
  // all and keep the fastest.
  int algorithms = 1;
  // f32 only: CUBLAS_COMPUTE_32F_FAST_TF32 instead of CUBLAS_COMPUTE_32F.
  bool allow_tf32 = false;
  // The alignment in bytes that run() promises for a, b and c and each batch
  // (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_{A,B,C,D}_BYTES; the library's
  // default, and what cuMemAlloc gives, is 256). A smaller value admits
  // fewer algorithms. run() refuses less aligned pointers.
  unsigned alignment_bytes = 256;
};

// Checks `problem` and builds, then frees, the cuBLASLt descriptors that
// CublasLtGemm would use for it (the matmul descriptor, the three layouts,
// the heuristic preference; cuBLAS documentation, "cublasLtMatmulDescCreate()",
// "cublasLtMatrixLayoutCreate()", "cublasLtMatmulPreferenceCreate()" and their
// SetAttribute calls, which reject an attribute of the wrong size). Needs
// libcublasLt but no GPU. Returns the problem with the default strides filled
// in; throws as CublasLtGemm's constructor does, short of the heuristic.
GemmProblem validate_cublaslt_problem(DType dtype, const GemmProblem& problem,
                                      const CublasLtOptions& options = {});

// A planned cuBLASLt GEMM: descriptors, the heuristic's algorithms and the
// workspace are set up once by the constructor; run() then only launches.
//
// dtype f16 / bf16: inputs and output in that dtype, fp32 accumulation and
// fp32 alpha/beta (CUBLAS_COMPUTE_32F, scale type CUDA_R_32F, the one
// combination the cuBLASLt documentation lists for 16F / 16BF inputs and
// outputs with fp32 accumulation). dtype f32: CUBLAS_COMPUTE_32F (no TF32)
// unless options.allow_tf32.
//
// Throws UserError when libcublasLt is missing (with the loader's reason),
// for a dtype other than f16/bf16/f32, non-positive sizes or batch, negative
// strides, a broadcast C (stride_c 0 with batch > 1), when cuBLASLt has no
// algorithm for the problem, and when the workspace cannot be allocated;
// InternalError for other cuBLASLt failures. The Device must outlive it.
class CublasLtGemm {
 public:
  CublasLtGemm(const Device& device, DType dtype, const GemmProblem& problem,
               const CublasLtOptions& options = {});
  CublasLtGemm(CublasLtGemm&&) noexcept;
  CublasLtGemm& operator=(CublasLtGemm&&) noexcept;
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;
  ~CublasLtGemm();

  // Enqueues C = A @ B (alpha 1, beta 0; C is only written) on the default
  // (NULL) stream with the selected algorithm (cublasLtMatmul; cuBLAS
  // documentation, "cublasLtMatmul()"). Asynchronous: a fault surfaces at the
  // next Device::synchronize(). a, b, c are device addresses of row-major
  // contiguous matrices as in GemmProblem; c must not overlap a or b.
  void run(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUstream stream = nullptr) const;

  // How many algorithms the heuristic returned (1 .. options.algorithms).
  int algorithm_count() const;
  // The index of the selected algorithm (0: the heuristic's top-1).
  int selected_algorithm() const;
  void select_algorithm(int index);
  // Bytes of workspace the selected algorithm needs (<= workspace_bytes).
  std::size_t selected_workspace_bytes() const;

  // Times every algorithm of the heuristic on (a, b, c) with
  // time_on_device(options) and selects the one with the smallest median.
  // Returns the timings, one per algorithm, in heuristic order. c is
  // overwritten.
  std::vector<Timing> autotune(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
                               const TimingOptions& options = {});

  // "cuBLASLt 13.1.0 f16 M=2048 N=2048 K=2048 batch=1, algorithm 1 of 1,
  // workspace 4194304 B", for reports; an f32 GEMM with allow_tf32 says
  // "f32 (tf32)".
  std::string describe() const;

  const GemmProblem& problem() const;  // with the default strides filled in
  DType dtype() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tilefuse::cuda
