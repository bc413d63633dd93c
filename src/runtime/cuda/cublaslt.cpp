// cuBLASLt baseline GEMM (see cublaslt.h).
#include "runtime/cuda/cublaslt.h"

#include <dlfcn.h>

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace tilefuse::cuda {
namespace {

// ---- Enum values, copied from the CUDA 13 headers (cuBLAS documentation,
// "cuBLASLt Datatypes Reference" and "cudaDataType_t").
constexpr cublasStatus_t kCublasSuccess = 0;         // CUBLAS_STATUS_SUCCESS
constexpr cublasStatus_t kCublasNotInitialized = 1;  // CUBLAS_STATUS_NOT_INITIALIZED
constexpr cublasStatus_t kCublasAllocFailed = 3;     // CUBLAS_STATUS_ALLOC_FAILED
constexpr cublasStatus_t kCublasArchMismatch = 8;    // CUBLAS_STATUS_ARCH_MISMATCH
constexpr cublasStatus_t kCublasNotSupported = 15;   // CUBLAS_STATUS_NOT_SUPPORTED
constexpr cublasStatus_t kCublasLicenseError = 16;   // CUBLAS_STATUS_LICENSE_ERROR

constexpr int kCudaR16F = 2;    // CUDA_R_16F
constexpr int kCudaR16BF = 14;  // CUDA_R_16BF
constexpr int kCudaR32F = 0;    // CUDA_R_32F

constexpr int kComputeF32 = 68;          // CUBLAS_COMPUTE_32F
constexpr int kComputeF32FastTf32 = 77;  // CUBLAS_COMPUTE_32F_FAST_TF32

constexpr std::int32_t kOpN = 0;  // CUBLAS_OP_N

// cublasLtMatmulDescAttributes_t
constexpr int kDescTransA = 3;  // CUBLASLT_MATMUL_DESC_TRANSA (int32_t)
constexpr int kDescTransB = 4;  // CUBLASLT_MATMUL_DESC_TRANSB (int32_t)
// cublasLtMatrixLayoutAttribute_t
constexpr int kLayoutOrder = 1;               // CUBLASLT_MATRIX_LAYOUT_ORDER (int32_t)
constexpr int kLayoutBatchCount = 5;          // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT (int32_t)
constexpr int kLayoutStridedBatchOffset = 6;  // ..._STRIDED_BATCH_OFFSET (int64_t, elements)
constexpr std::int32_t kOrderCol = 0;         // CUBLASLT_ORDER_COL
// cublasLtMatmulPreferenceAttributes_t
constexpr int kPrefMaxWorkspaceBytes = 1;  // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES (uint64_t)
constexpr int kPrefMinAlignmentA = 5;      // ..._MIN_ALIGNMENT_A_BYTES (uint32_t); B, C, D follow

// ---- Loading

template <typename Fn>
void resolve(void* handle, Fn*& slot, const char* name, std::vector<std::string>* missing) {
  void* sym = dlsym(handle, name);
  if (sym == nullptr) {
    missing->push_back(name);
    return;
  }
  slot = reinterpret_cast<Fn*>(sym);
}

std::string status_string(const CublasLtLibrary& lib, cublasStatus_t rc) {
  const char* s =
      lib.cublasLtGetStatusString != nullptr ? lib.cublasLtGetStatusString(rc) : nullptr;
  return std::string(s != nullptr ? s : "unknown cuBLAS status") + " (cuBLAS status " +
         std::to_string(rc) + ")";
}

// Throws for rc != CUBLAS_STATUS_SUCCESS, naming `call`: UserError for what
// the user can act on (no GPU or driver, out of memory, no algorithm for
// this GPU or problem, licence), InternalError otherwise.
void check_cublas(const CublasLtLibrary& lib, cublasStatus_t rc, const std::string& call) {
  if (rc == kCublasSuccess) return;
  const std::string msg = call + " failed: " + status_string(lib, rc);
  switch (rc) {
    case kCublasNotInitialized:
    case kCublasAllocFailed:
    case kCublasArchMismatch:
    case kCublasNotSupported:
    case kCublasLicenseError:
      throw UserError(msg);
    default:
      throw InternalError(msg);
  }
}

int cuda_data_type(DType dtype) {
  switch (dtype) {
    case DType::F16:
      return kCudaR16F;
    case DType::BF16:
      return kCudaR16BF;
    case DType::F32:
      return kCudaR32F;
    default:
      throw UserError("cuBLASLt GEMM: unsupported dtype " + std::string(dtype_name(dtype)) +
                      " (f16, bf16 and f32 are supported)");
  }
}

// The largest power of two <= cap that divides `bytes` (cap when bytes is 0).
unsigned alignment_of(std::uint64_t bytes, unsigned cap) {
  unsigned a = 1;
  while (a < cap && bytes % (2ull * a) == 0) a *= 2;
  return bytes == 0 ? cap : a;
}

}  // namespace

CublasLtLibrary::~CublasLtLibrary() {
  if (handle != nullptr) dlclose(handle);
}

std::unique_ptr<CublasLtLibrary> open_cublaslt(const EnvGetter& env, std::string* why_not) {
  std::string path;
  void* handle = open_library_handle(Library::kCublasLt, env, &path, why_not);
  if (handle == nullptr) return nullptr;
  auto lib = std::make_unique<CublasLtLibrary>();
  lib->handle = handle;
  lib->path = path;
  std::vector<std::string> missing;
  resolve(handle, lib->cublasLtCreate, "cublasLtCreate", &missing);
  resolve(handle, lib->cublasLtDestroy, "cublasLtDestroy", &missing);
  resolve(handle, lib->cublasLtGetVersion, "cublasLtGetVersion", &missing);
  resolve(handle, lib->cublasLtGetStatusString, "cublasLtGetStatusString", &missing);
  resolve(handle, lib->cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate", &missing);
  resolve(handle, lib->cublasLtMatmulDescDestroy, "cublasLtMatmulDescDestroy", &missing);
  resolve(handle, lib->cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute", &missing);
  resolve(handle, lib->cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate", &missing);
  resolve(handle, lib->cublasLtMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy", &missing);
  resolve(handle, lib->cublasLtMatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute",
          &missing);
  resolve(handle, lib->cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate", &missing);
  resolve(handle, lib->cublasLtMatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy",
          &missing);
  resolve(handle, lib->cublasLtMatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute",
          &missing);
  resolve(handle, lib->cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic", &missing);
  resolve(handle, lib->cublasLtMatmul, "cublasLtMatmul", &missing);
  if (!missing.empty()) {
    if (why_not) {
      std::string msg =
          "libcublasLt at " + path + " is not usable: it lacks the symbol " + missing.front();
      if (missing.size() > 1) {
        msg += " (and " + std::to_string(missing.size() - 1) + " more: ";
        for (std::size_t i = 1; i < missing.size(); ++i) msg += (i > 1 ? ", " : "") + missing[i];
        msg += ")";
      }
      *why_not = msg + ".";
    }
    return nullptr;  // closes the handle
  }
  if (why_not) why_not->clear();
  return lib;
}

namespace {
struct CublasLtLoad {
  const CublasLtLibrary* lib = nullptr;
  std::string why_not;
};
const CublasLtLoad& process_cublaslt() {
  static const CublasLtLoad load = [] {
    CublasLtLoad r;
    r.lib = open_cublaslt(process_env(), &r.why_not).release();  // never unloaded
    return r;
  }();
  return load;
}
}  // namespace

const CublasLtLibrary* load_cublaslt(std::string* why_not) {
  const CublasLtLoad& r = process_cublaslt();
  if (why_not) *why_not = r.why_not;
  return r.lib;
}

bool cublaslt_available(std::string* why_not) {
  return load_cublaslt(why_not) != nullptr;
}

std::string cublaslt_version() {
  const CublasLtLibrary* lib = load_cublaslt();
  if (lib == nullptr) return {};
  const std::size_t v = lib->cublasLtGetVersion();
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

// ---- Descriptors (no GPU needed)

namespace {

std::string problem_text(DType dtype, const GemmProblem& p) {
  return std::string(dtype_name(dtype)) + " M=" + std::to_string(p.m) +
         " N=" + std::to_string(p.n) + " K=" + std::to_string(p.k) +
         " batch=" + std::to_string(p.batch);
}

// `problem` checked, with the default strides filled in.
GemmProblem complete_problem(const GemmProblem& problem, const CublasLtOptions& options) {
  GemmProblem p = problem;
  if (p.m <= 0 || p.n <= 0 || p.k <= 0 || p.batch <= 0) {
    throw UserError("cuBLASLt GEMM: sizes must be positive (M=" + std::to_string(p.m) +
                    " N=" + std::to_string(p.n) + " K=" + std::to_string(p.k) +
                    " batch=" + std::to_string(p.batch) + ")");
  }
  if (p.stride_a < 0) p.stride_a = p.m * p.k;
  if (p.stride_b < 0) p.stride_b = p.k * p.n;
  if (p.stride_c < 0) p.stride_c = p.m * p.n;
  if (p.batch > 1 && p.stride_c == 0) {
    throw UserError("cuBLASLt GEMM: the output cannot be broadcast (stride_c 0 with batch " +
                    std::to_string(p.batch) + ")");
  }
  if (options.algorithms < 1) {
    throw UserError("cuBLASLt GEMM: at least one algorithm must be requested (got " +
                    std::to_string(options.algorithms) + ")");
  }
  if (options.alignment_bytes == 0 || (options.alignment_bytes & (options.alignment_bytes - 1))) {
    throw UserError("cuBLASLt GEMM: the alignment must be a power of two (got " +
                    std::to_string(options.alignment_bytes) + ")");
  }
  return p;
}

// The matmul descriptor, the layouts and the heuristic preference of one
// problem; host-side objects (no handle, no GPU). Destroyed in reverse.
struct Descriptors {
  const CublasLtLibrary* lib = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  // In cuBLASLt's (column-major) naming: a_layout describes our B, b_layout
  // our A, c_layout our C (used for both C and D).
  cublasLtMatrixLayout_t a_layout = nullptr, b_layout = nullptr, c_layout = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;

  Descriptors(const CublasLtLibrary& l, DType dtype, const GemmProblem& p,
              const CublasLtOptions& options);
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    if (pref != nullptr) lib->cublasLtMatmulPreferenceDestroy(pref);
    if (c_layout != nullptr) lib->cublasLtMatrixLayoutDestroy(c_layout);
    if (b_layout != nullptr) lib->cublasLtMatrixLayoutDestroy(b_layout);
    if (a_layout != nullptr) lib->cublasLtMatrixLayoutDestroy(a_layout);
    if (desc != nullptr) lib->cublasLtMatmulDescDestroy(desc);
  }

  // A column-major rows x cols layout with leading dimension ld, strided
  // batched when batch > 1 (cuBLAS documentation,
  // "cublasLtMatrixLayoutCreate()", "cublasLtMatrixLayoutAttribute_t"),
  // stored in *slot so that the destructor frees it whatever happens next.
  void layout(cublasLtMatrixLayout_t* slot, int type, std::int64_t rows, std::int64_t cols,
              std::int64_t ld, int batch, std::int64_t stride) {
    check_cublas(*lib,
                 lib->cublasLtMatrixLayoutCreate(slot, type, static_cast<std::uint64_t>(rows),
                                                 static_cast<std::uint64_t>(cols), ld),
                 "cublasLtMatrixLayoutCreate");
    const std::int32_t order = kOrderCol;
    check_cublas(*lib,
                 lib->cublasLtMatrixLayoutSetAttribute(*slot, kLayoutOrder, &order, sizeof order),
                 "cublasLtMatrixLayoutSetAttribute(ORDER)");
    if (batch > 1) {
      const std::int32_t count = batch;
      check_cublas(
          *lib,
          lib->cublasLtMatrixLayoutSetAttribute(*slot, kLayoutBatchCount, &count, sizeof count),
          "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
      check_cublas(*lib,
                   lib->cublasLtMatrixLayoutSetAttribute(*slot, kLayoutStridedBatchOffset, &stride,
                                                         sizeof stride),
                   "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
    }
  }
};

Descriptors::Descriptors(const CublasLtLibrary& l, DType dtype, const GemmProblem& p,
                         const CublasLtOptions& options)
    : lib(&l) {
  const int type = cuda_data_type(dtype);
  // [cublasLtMatmulDescCreate()] compute type and scale type (alpha, beta).
  const int compute = dtype == DType::F32 && options.allow_tf32 ? kComputeF32FastTf32 : kComputeF32;
  check_cublas(*lib, lib->cublasLtMatmulDescCreate(&desc, compute, kCudaR32F),
               "cublasLtMatmulDescCreate");
  const std::int32_t op = kOpN;
  check_cublas(*lib, lib->cublasLtMatmulDescSetAttribute(desc, kDescTransA, &op, sizeof op),
               "cublasLtMatmulDescSetAttribute(TRANSA)");
  check_cublas(*lib, lib->cublasLtMatmulDescSetAttribute(desc, kDescTransB, &op, sizeof op),
               "cublasLtMatmulDescSetAttribute(TRANSB)");

  // Row-major C = A @ B as column-major C^T = B^T @ A^T (cublaslt.h).
  layout(&a_layout, type, p.n, p.k, p.n, p.batch, p.stride_b);  // our B: N x K, ld N
  layout(&b_layout, type, p.k, p.m, p.k, p.batch, p.stride_a);  // our A: K x M, ld K
  layout(&c_layout, type, p.n, p.m, p.n, p.batch, p.stride_c);  // our C: N x M, ld N

  // [cublasLtMatmulPreferenceAttributes_t] the workspace limit and the
  // alignment run() guarantees. Later batches start at base + i*stride, so
  // the promised alignment is also limited by each stride in bytes.
  check_cublas(*lib, lib->cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const std::uint64_t max_ws = options.workspace_bytes;
  check_cublas(*lib,
               lib->cublasLtMatmulPreferenceSetAttribute(pref, kPrefMaxWorkspaceBytes, &max_ws,
                                                         sizeof max_ws),
               "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
  const std::uint64_t elem = static_cast<std::uint64_t>(dtype_size(dtype));
  const std::int64_t strides[4] = {p.stride_b, p.stride_a, p.stride_c, p.stride_c};  // Lt's A B C D
  const char* names[4] = {"A", "B", "C", "D"};
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t align =
        p.batch > 1
            ? alignment_of(static_cast<std::uint64_t>(strides[i]) * elem, options.alignment_bytes)
            : options.alignment_bytes;
    check_cublas(
        *lib,
        lib->cublasLtMatmulPreferenceSetAttribute(pref, kPrefMinAlignmentA + i, &align,
                                                  sizeof align),
        std::string("cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_") + names[i] + "_BYTES)");
  }
}

const CublasLtLibrary& require_cublaslt() {
  std::string why_not;
  const CublasLtLibrary* lib = load_cublaslt(&why_not);
  if (lib == nullptr) throw UserError("cuBLASLt is not available: " + why_not);
  return *lib;
}

}  // namespace

GemmProblem validate_cublaslt_problem(DType dtype, const GemmProblem& problem,
                                      const CublasLtOptions& options) {
  const CublasLtLibrary& lib = require_cublaslt();
  const GemmProblem p = complete_problem(problem, options);
  Descriptors check(lib, dtype, p, options);
  return p;
}

// ---- CublasLtGemm

struct CublasLtGemm::Impl {
  const CublasLtLibrary* lib = nullptr;
  const Device* device = nullptr;
  DType dtype = DType::F16;
  GemmProblem p;
  CublasLtOptions options;
  std::unique_ptr<Descriptors> d;
  cublasLtHandle_t handle = nullptr;
  DeviceBuffer workspace;
  std::vector<cublasLtMatmulHeuristicResult_t> algos;
  int selected = 0;

  ~Impl() {
    if (handle != nullptr) lib->cublasLtDestroy(handle);
  }
};

CublasLtGemm::CublasLtGemm(const Device& device, DType dtype, const GemmProblem& problem,
                           const CublasLtOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.lib = &require_cublaslt();
  const CublasLtLibrary& lib = *s.lib;
  s.device = &device;
  s.dtype = dtype;
  s.options = options;
  s.p = complete_problem(problem, options);
  s.d = std::make_unique<Descriptors>(lib, dtype, s.p, options);

  device.make_current();
  s.workspace = DeviceBuffer(device, options.workspace_bytes);
  // [cublasLtCreate()] The handle binds to the current device (the primary
  // context of `device`, shared with the CUDA runtime inside cuBLASLt).
  check_cublas(lib, lib.cublasLtCreate(&s.handle), "cublasLtCreate");

  // [cublasLtMatmulAlgoGetHeuristic()] the best `algorithms` candidates, in
  // the heuristic's order; only those whose state is SUCCESS are kept.
  std::vector<cublasLtMatmulHeuristicResult_t> results(options.algorithms);
  int returned = 0;
  const cublasStatus_t rc = lib.cublasLtMatmulAlgoGetHeuristic(
      s.handle, s.d->desc, s.d->a_layout, s.d->b_layout, s.d->c_layout, s.d->c_layout, s.d->pref,
      options.algorithms, results.data(), &returned);
  const std::string what = problem_text(dtype, s.p);
  check_cublas(lib, rc, "cublasLtMatmulAlgoGetHeuristic (" + what + ")");
  for (int i = 0; i < returned && i < options.algorithms; ++i) {
    if (results[i].state == kCublasSuccess) s.algos.push_back(results[i]);
  }
  if (s.algos.empty()) {
    throw UserError("cuBLASLt has no algorithm for the GEMM " + what + " on " + device.name() +
                    " with a workspace of " + std::to_string(options.workspace_bytes) + " bytes");
  }
}

CublasLtGemm::CublasLtGemm(CublasLtGemm&&) noexcept = default;
CublasLtGemm& CublasLtGemm::operator=(CublasLtGemm&&) noexcept = default;
CublasLtGemm::~CublasLtGemm() = default;

void CublasLtGemm::run(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUstream stream) const {
  const Impl& s = *impl_;
  const unsigned align = s.options.alignment_bytes;
  for (auto [ptr, name] : {std::pair{a, "A"}, std::pair{b, "B"}, std::pair{c, "C"}}) {
    if (ptr % align != 0) {
      throw UserError(std::string("cuBLASLt GEMM: operand ") + name + " is not aligned to " +
                      std::to_string(align) + " bytes (see CublasLtOptions::alignment_bytes)");
    }
  }
  const float alpha = 1.0f, beta = 0.0f;  // CUDA_R_32F scale type, host pointers
  const cublasLtMatmulHeuristicResult_t& algo = s.algos[s.selected];
  void* c_ptr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(c));
  // [cublasLtMatmul()] D = alpha * (A @ B) + beta * C with C == D; cuBLASLt's
  // A is our B and its B our A (row-major trick). On `stream` (0: the legacy
  // default stream, ordered with Event::record and DeviceBuffer::memset).
  const cublasStatus_t rc = s.lib->cublasLtMatmul(
      s.handle, s.d->desc, &alpha, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(b)),
      s.d->a_layout, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(a)), s.d->b_layout,
      &beta, c_ptr, s.d->c_layout, c_ptr, s.d->c_layout, &algo.algo,
      reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.workspace.ptr())),
      s.options.workspace_bytes, stream);
  check_cublas(*s.lib, rc, "cublasLtMatmul");
}

int CublasLtGemm::algorithm_count() const {
  return static_cast<int>(impl_->algos.size());
}

int CublasLtGemm::selected_algorithm() const {
  return impl_->selected;
}

void CublasLtGemm::select_algorithm(int index) {
  if (index < 0 || index >= algorithm_count()) {
    throw UserError("cuBLASLt GEMM: algorithm " + std::to_string(index) + " out of range [0, " +
                    std::to_string(algorithm_count()) + ")");
  }
  impl_->selected = index;
}

std::size_t CublasLtGemm::selected_workspace_bytes() const {
  return impl_->algos[impl_->selected].workspaceSize;
}

std::vector<Timing> CublasLtGemm::autotune(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
                                           const TimingOptions& options) {
  std::vector<Timing> timings;
  int best = 0;
  for (int i = 0; i < algorithm_count(); ++i) {
    select_algorithm(i);
    timings.push_back(time_on_device(
        *impl_->device, [&] { run(a, b, c); }, options));
    if (timings[i].median_ms < timings[best].median_ms) best = i;
  }
  select_algorithm(best);
  return timings;
}

std::string CublasLtGemm::describe() const {
  const Impl& s = *impl_;
  return "cuBLASLt " + cublaslt_version() + " " + std::string(dtype_name(s.dtype)) +
         (s.dtype == DType::F32 && s.options.allow_tf32 ? " (tf32)" : "") + " M=" + std::to_string(s.p.m) + " N=" + std::to_string(s.p.n) +
         " K=" + std::to_string(s.p.k) + " batch=" + std::to_string(s.p.batch) + ", algorithm " +
         std::to_string(s.selected + 1) + " of " + std::to_string(s.algos.size()) + ", workspace " +
         std::to_string(selected_workspace_bytes()) + " B";
}

const GemmProblem& CublasLtGemm::problem() const {
  return impl_->p;
}

DType CublasLtGemm::dtype() const {
  return impl_->dtype;
}

}  // namespace tilefuse::cuda
