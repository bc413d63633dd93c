// The compiled-kernel cache (DESIGN.md, "caches"): NVRTC results stored
// under <cache root>/kernels, keyed by a hash of the source, the program
// name, the architecture, the NVRTC version, every compile option and the
// text of the embedded device headers NVRTC is given (device_headers.h), so
// a rebuilt library with changed headers never reuses a stale cubin.
//
// A cached kernel is the CompiledKernel of the cold compile, field for field:
// name, arch, cubin bytes, NVRTC log and the parsed ptxas usage (`usage` and
// `all_usage` are stored as they were, so a warm compile reports the same
// registers and spills as the cold one).
//
// Entry payload (inside the DiskCache entry format of disk_cache.h):
//   8 bytes   little-endian length N of the metadata
//   N bytes   metadata, JSON: {"format", "name", "arch", "log", "cubin_bytes",
//             "usage", "all_usage"} (usage objects: present, function,
//             registers, stack_frame_bytes, spill_store_bytes,
//             spill_load_bytes, shared_bytes)
//   …         the cubin, raw (cubin_bytes bytes)
// An entry that does not decode, or whose name/arch do not match the request,
// is a miss and is recompiled and replaced.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/cache/disk_cache.h"
#include "runtime/cuda/nvrtc.h"

namespace tilefuse::cache {

// Headers NVRTC is given besides the source: (name as #included, text).
using HeaderList = std::vector<std::pair<std::string_view, std::string_view>>;

// The key of one compile: the 32 hex digits of XXH3-128 over a format tag,
// the source, the name, options.arch, `nvrtc_version`, every string of
// options.extra and every header of `headers` (name and text, in order),
// each length-prefixed (so no two different requests serialize alike).
std::string kernel_cache_key(const std::string& source, const std::string& name,
                             const cuda::CompileOptions& options, const std::string& nvrtc_version,
                             const HeaderList& headers = {});

// The payload format above; decode returns nullopt for anything malformed.
std::string encode_compiled_kernel(const cuda::CompiledKernel& kernel);
std::optional<cuda::CompiledKernel> decode_compiled_kernel(std::string_view payload);

// True when the options ask ptxas for its -v report ("--ptxas-options=-v",
// "-Xptxas -v", "-Xptxas=-v", also inside a comma list such as
// "--ptxas-options=-v,-O3").
bool requests_ptxas_report(const cuda::CompileOptions& options);

class KernelCache {
 public:
  // Entries live directly in `dir` (normally <root>/kernels).
  explicit KernelCache(std::string dir, DiskCache::WarningSink warn = {});

  // The key compile() uses: kernel_cache_key with the loaded NVRTC's version
  // and, when options.device_headers, every embedded device header.
  static std::string key_for(const std::string& source, const std::string& name,
                             const cuda::CompileOptions& options);

  // The cached kernel for `key` (from kernel_cache_key), or nullopt.
  std::optional<cuda::CompiledKernel> get(const std::string& key) const;
  // Stores `kernel` under `key`; false when the cache cannot be written.
  bool put(const std::string& key, const cuda::CompiledKernel& kernel) const;

  // cuda::compile_cuda through the cache: a hit returns the stored kernel
  // without calling NVRTC (NVRTC must still load, for its version); a miss
  // compiles and stores the result. `from_cache` (optional) says which.
  // Errors as cuda::compile_cuda (a failed compile throws UserError and is
  // not cached). When the options ask for the ptxas -v report and the
  // compile has none (NVRTC served it from NVIDIA's compute cache under
  // ~/.nv, so ptxas did not run; see nvrtc.h, PtxasUsage::present), the
  // compile is repeated once with "--no-cache" added; a result still without
  // the report is returned but not stored, so the cache never pins a kernel
  // with unknown resource usage. The key is always that of `options` as
  // given.
  cuda::CompiledKernel compile(const std::string& source, const std::string& name,
                               const cuda::CompileOptions& options,
                               bool* from_cache = nullptr) const;

  const DiskCache& store() const { return store_; }

 private:
  DiskCache store_;
};

// <default_cache_root()>/kernels.
std::string default_kernel_cache_dir();

// cuda::compile_cuda through the kernel cache at default_kernel_cache_dir(),
// or straight to NVRTC when caching is disabled (TILEFUSE_NO_CACHE, see
// cache_enabled()). An unwritable cache prints one warning per process on
// stderr and the compile goes on. `from_cache` as in KernelCache::compile.
// A non-empty `root` puts the cache at `root`/kernels instead (a caller's
// option, which also keeps it on under TILEFUSE_NO_CACHE).
cuda::CompiledKernel compile_cuda_cached(const std::string& source, const std::string& name,
                                         const cuda::CompileOptions& options = {},
                                         bool* from_cache = nullptr, const std::string& root = "");

}  // namespace tilefuse::cache
