// Dynamic loader for libcuda and libnvrtc (see loader.h for the search order).
#include "runtime/cuda/loader.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <utility>

namespace tilefuse::cuda {
namespace {

constexpr CUresult kCudaErrorNoDevice = 100;  // CUDA_ERROR_NO_DEVICE

constexpr std::string_view kStubMarker = "/stubs/";

bool is_stub(std::string_view path) {
  return path.find(kStubMarker) != std::string_view::npos;
}

std::vector<std::string> sonames(Library lib) {
  switch (lib) {
    case Library::kCuda:
      return {"libcuda.so.1"};
    case Library::kNvrtc:
      return {"libnvrtc.so.13", "libnvrtc.so.12"};
    case Library::kCublasLt:
      return {"libcublasLt.so.13", "libcublasLt.so.12"};
  }
  return {};
}

std::string env_value(const EnvGetter& env, const char* name) {
  if (!env) return {};
  const char* v = env(name);
  return v ? std::string(v) : std::string();
}

std::string strip_trailing_slashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// The file a handle was really loaded from (the dynamic linker's view), or ""
// when it cannot tell.
std::string loaded_path(void* handle) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) {
    return {};
  }
  return map->l_name;
}

// Where the dynamic linker finds a bare soname through LD_LIBRARY_PATH (its
// first directory holding a file of that name; ld.so(8): entries separated
// by ':' or ';', an empty entry the current directory), or "" when none
// does and the system's directories decide.
std::string soname_in_library_path(const std::string& soname, const EnvGetter& env) {
  const std::string list = env_value(env, "LD_LIBRARY_PATH");
  std::size_t begin = 0;
  while (!list.empty() && begin <= list.size()) {
    std::size_t end = list.find_first_of(":;", begin);
    if (end == std::string::npos) end = list.size();
    const std::string dir = end == begin ? std::string(".") : list.substr(begin, end - begin);
    const std::string file = dir + "/" + soname;
    if (::access(file.c_str(), F_OK) == 0) return file;
    begin = end + 1;
  }
  return {};
}

// Opens `lib` from the first usable candidate. On success returns the handle
// and sets `path`; otherwise returns nullptr and appends to `tried` one entry
// per candidate ("<path> (<why>)"). A library that opened is returned even if
// it later lacks symbols: that is reported by the caller.
void* open_library(Library lib, const EnvGetter& env, std::string* path,
                   std::vector<std::string>* tried) {
  // An explicit override is the user's decision: it is the only candidate,
  // and when it cannot be used the load fails and says why, rather than
  // quietly picking another library than the one asked for.
  const std::string forced = env_value(env, override_variable(lib));
  if (!forced.empty() && is_stub(forced)) {
    tried->push_back(forced + " (a stub library, skipped)");
    return nullptr;
  }
  const std::vector<std::string> candidates =
      forced.empty() ? candidate_paths(lib, env) : std::vector<std::string>{forced};
  for (const std::string& candidate : candidates) {
    const bool is_file = candidate.find('/') != std::string::npos;
    if (is_file && access(candidate.c_str(), F_OK) != 0) {
      tried->push_back(candidate + " (no such file)");
      continue;
    }
    // dlopen open(2)s and reads the file (a path, or the one a bare soname
    // resolves to through LD_LIBRARY_PATH): a FIFO would block it forever,
    // a device or a directory is no library either.
    const std::string file = is_file ? candidate : soname_in_library_path(candidate, env);
    struct stat st {};
    if (!file.empty() && (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode))) {
      tried->push_back(candidate + (is_file ? " (not a regular file)"
                                            : " (found through LD_LIBRARY_PATH at " + file +
                                                  ", not a regular file)"));
      continue;
    }
    dlerror();  // clear any stale message
    void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = dlerror();
      tried->push_back(candidate + " (" + (err ? err : "dlopen failed") + ")");
      continue;
    }
    // A soname may resolve (through LD_LIBRARY_PATH) to a toolkit stub.
    std::string real = loaded_path(handle);
    if (is_stub(real)) {
      dlclose(handle);
      tried->push_back(candidate + " (resolves to the stub library " + real + ", skipped)");
      continue;
    }
    *path = is_file || real.empty() ? candidate : real;
    return handle;
  }
  return nullptr;
}

// Resolves symbols from one library, remembering the ones it lacks.
class SymbolResolver {
 public:
  explicit SymbolResolver(void* handle) : handle_(handle) {}

  template <typename Fn>
  void operator()(Fn*& slot, const char* name) {
    void* sym = dlsym(handle_, name);
    if (sym == nullptr) {
      missing_.push_back(name);
      return;
    }
    slot = reinterpret_cast<Fn*>(sym);
  }

  const std::vector<std::string>& missing() const { return missing_; }

 private:
  void* handle_;
  std::vector<std::string> missing_;
};

std::string missing_symbols_message(Library lib, const std::string& path,
                                    const std::vector<std::string>& missing) {
  std::string msg = std::string(library_name(lib)) + " at " + path +
                    " is not usable: it lacks the symbol " + missing.front();
  if (missing.size() > 1) {
    msg += " (and " + std::to_string(missing.size() - 1) + " more: ";
    for (std::size_t i = 1; i < missing.size(); ++i) {
      if (i > 1) msg += ", ";
      msg += missing[i];
    }
    msg += ")";
  }
  return msg + ".";
}

std::string not_found_message(Library lib, const std::vector<std::string>& tried,
                              const EnvGetter& env) {
  std::string what = lib == Library::kCuda    ? "the CUDA driver library (libcuda)"
                     : lib == Library::kNvrtc ? "the CUDA runtime compiler library (libnvrtc)"
                                              : "the cuBLASLt library (libcublasLt)";
  std::string msg = "Could not load " + what + "; tried ";
  for (std::size_t i = 0; i < tried.size(); ++i) {
    if (i > 0) msg += ", ";
    msg += tried[i];
  }
  const char* var = override_variable(lib);
  const char* set = env(var);
  if (set != nullptr && set[0] != '\0')
    msg += std::string(". ") + var + " is set, so nothing else was tried: point it at a working " +
           "copy of the library, or unset it to search CUDA_HOME and the standard paths.";
  else
    msg +=
        ". Set " + std::string(var) + " to its full path, or CUDA_HOME to the CUDA installation.";
  return msg;
}

void resolve_libcuda(CudaLibraries& l, SymbolResolver& r) {
  r(l.cuInit, "cuInit");
  r(l.cuDriverGetVersion, "cuDriverGetVersion");
  r(l.cuGetErrorString, "cuGetErrorString");
  r(l.cuDeviceGetCount, "cuDeviceGetCount");
  r(l.cuDeviceGet, "cuDeviceGet");
  r(l.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  r(l.cuDeviceGetName, "cuDeviceGetName");
  r(l.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  r(l.cuCtxSetCurrent, "cuCtxSetCurrent");
  r(l.cuCtxSynchronize, "cuCtxSynchronize");
  r(l.cuModuleLoadData, "cuModuleLoadData");
  r(l.cuModuleGetFunction, "cuModuleGetFunction");
  r(l.cuModuleGetGlobal_v2, "cuModuleGetGlobal_v2");
  r(l.cuLaunchKernel, "cuLaunchKernel");
  r(l.cuFuncGetAttribute, "cuFuncGetAttribute");
  r(l.cuFuncSetAttribute, "cuFuncSetAttribute");
  r(l.cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  r(l.cuMemAlloc_v2, "cuMemAlloc_v2");
  r(l.cuMemFree_v2, "cuMemFree_v2");
  r(l.cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2");
  r(l.cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2");
  r(l.cuMemsetD8_v2, "cuMemsetD8_v2");
  r(l.cuEventCreate, "cuEventCreate");
  r(l.cuEventRecord, "cuEventRecord");
  r(l.cuEventElapsedTime, "cuEventElapsedTime");
}

void resolve_libnvrtc(CudaLibraries& l, SymbolResolver& r) {
  r(l.nvrtcVersion, "nvrtcVersion");
  r(l.nvrtcGetErrorString, "nvrtcGetErrorString");
  r(l.nvrtcCreateProgram, "nvrtcCreateProgram");
  r(l.nvrtcCompileProgram, "nvrtcCompileProgram");
  r(l.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
  r(l.nvrtcGetProgramLog, "nvrtcGetProgramLog");
  r(l.nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
  r(l.nvrtcGetCUBIN, "nvrtcGetCUBIN");
  r(l.nvrtcDestroyProgram, "nvrtcDestroyProgram");
}

// Loads one library into `libs`; returns false with a message appended to
// `problems` when it is missing or lacks a symbol.
bool load_one(Library lib, const EnvGetter& env, CudaLibraries& libs,
              std::vector<std::string>* problems) {
  std::string path;
  std::vector<std::string> tried;
  void* handle = open_library(lib, env, &path, &tried);
  if (handle == nullptr) {
    problems->push_back(not_found_message(lib, tried, env));
    return false;
  }
  (lib == Library::kCuda ? libs.libcuda_handle : libs.libnvrtc_handle) = handle;
  (lib == Library::kCuda ? libs.libcuda_path : libs.libnvrtc_path) = path;
  SymbolResolver resolver(handle);
  if (lib == Library::kCuda) {
    resolve_libcuda(libs, resolver);
  } else {
    resolve_libnvrtc(libs, resolver);
  }
  if (!resolver.missing().empty()) {
    problems->push_back(missing_symbols_message(lib, path, resolver.missing()));
    return false;
  }
  return true;
}

std::string join_sentences(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += " ";
    out += p;
  }
  return out;
}

}  // namespace

CudaLibraries::~CudaLibraries() {
  if (libnvrtc_handle != nullptr) dlclose(libnvrtc_handle);
  if (libcuda_handle != nullptr) dlclose(libcuda_handle);
}

EnvGetter process_env() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

const char* library_name(Library lib) {
  switch (lib) {
    case Library::kCuda:
      return "libcuda";
    case Library::kNvrtc:
      return "libnvrtc";
    case Library::kCublasLt:
      return "libcublasLt";
  }
  return "?";
}

const char* override_variable(Library lib) {
  switch (lib) {
    case Library::kCuda:
      return "TILEFUSE_LIBCUDA";
    case Library::kNvrtc:
      return "TILEFUSE_LIBNVRTC";
    case Library::kCublasLt:
      return "TILEFUSE_LIBCUBLASLT";
  }
  return "?";
}

std::vector<std::string> candidate_paths(Library lib, const EnvGetter& env) {
  std::vector<std::string> out;
  auto add = [&](std::string path) {
    if (path.empty() || is_stub(path)) return;
    if (std::find(out.begin(), out.end(), path) != out.end()) return;
    out.push_back(std::move(path));
  };
  const std::vector<std::string> names = sonames(lib);
  auto add_dir = [&](const std::string& dir) {
    for (const std::string& name : names) add(dir + "/" + name);
  };

  // 1. The override: a full path to the library file.
  add(env_value(env, override_variable(lib)));
  // 2. The CUDA installation named by the environment.
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    std::string root = env_value(env, var);
    if (root.empty()) continue;
    root = strip_trailing_slashes(root);
    if (root == "/") root.clear();
    for (const char* sub : {"lib64", "targets/x86_64-linux/lib", "lib"}) {
      std::string dir = root;
      dir += '/';
      dir += sub;
      add_dir(dir);
    }
  }
  // 3. The standard places.
  for (const char* dir : {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
                          "/usr/lib/x86_64-linux-gnu", "/usr/lib", "/usr/lib64"}) {
    add_dir(dir);
  }
  // 4. The bare sonames, left to the dynamic linker.
  for (const std::string& name : names) add(name);
  return out;
}

bool resolve_nvrtc(void* handle, const std::string& path, CudaLibraries& libs,
                   std::string* why_not) {
  SymbolResolver resolver(handle);
  resolve_libnvrtc(libs, resolver);
  if (!resolver.missing().empty()) {
    if (why_not) *why_not = missing_symbols_message(Library::kNvrtc, path, resolver.missing());
    return false;
  }
  libs.libnvrtc_handle = handle;
  libs.libnvrtc_path = path;
  return true;
}

void* open_library_handle(Library lib, const EnvGetter& env, std::string* path,
                          std::string* why_not) {
  std::string found;
  std::vector<std::string> tried;
  void* handle = open_library(lib, env, &found, &tried);
  if (handle == nullptr) {
    if (why_not) *why_not = not_found_message(lib, tried, env);
    return nullptr;
  }
  if (path) *path = found;
  if (why_not) why_not->clear();
  return handle;
}

std::unique_ptr<CudaLibraries> open_cuda_libraries(const EnvGetter& env, std::string* why_not) {
  auto libs = std::make_unique<CudaLibraries>();
  std::vector<std::string> problems;
  // libnvrtc only where libcuda loads: without a driver there is no GPU to
  // compile for, and a machine without one should not map the compiler.
  const bool ok = load_one(Library::kCuda, env, *libs, &problems) &&
                  load_one(Library::kNvrtc, env, *libs, &problems);
  if (!ok) {
    if (why_not) *why_not = join_sentences(problems);
    return nullptr;
  }
  if (why_not) why_not->clear();
  return libs;
}

namespace {

struct LoadResult {
  const CudaLibraries* libs = nullptr;
  std::string why_not;
};

const LoadResult& process_libraries() {
  // Thread-safe one-time initialisation; the tables are never unloaded
  // (unloading libcuda at exit is unsafe while other threads may use it).
  static const LoadResult result = [] {
    LoadResult r;
    r.libs = open_cuda_libraries(process_env(), &r.why_not).release();
    return r;
  }();
  return result;
}

struct Availability {
  bool available = false;
  std::string why_not;
};

}  // namespace

const CudaLibraries* load_cuda_libraries(std::string* why_not) {
  const LoadResult& r = process_libraries();
  if (why_not) *why_not = r.why_not;
  return r.libs;
}

std::string cuda_error_string(const CudaLibraries& libs, CUresult result) {
  const char* str = nullptr;
  if (libs.cuGetErrorString != nullptr && libs.cuGetErrorString(result, &str) == kCudaSuccess &&
      str != nullptr) {
    return std::string(str) + " (CUDA error " + std::to_string(result) + ")";
  }
  return "unknown CUDA error " + std::to_string(result);
}

bool cuda_available(std::string* why_not) {
  static const Availability availability = [] {
    Availability a;
    const CudaLibraries* libs = load_cuda_libraries(&a.why_not);
    if (libs == nullptr) return a;
    if (CUresult rc = libs->cuInit(0); rc != kCudaSuccess) {
      if (rc == kCudaErrorNoDevice) {
        a.why_not = "Found no CUDA device: cuInit reports " + cuda_error_string(*libs, rc) +
                    " (libcuda at " + libs->libcuda_path + ").";
        return a;
      }
      a.why_not = "No usable CUDA driver: cuInit failed with " + cuda_error_string(*libs, rc) +
                  " (libcuda at " + libs->libcuda_path + ").";
      return a;
    }
    int count = 0;
    if (CUresult rc = libs->cuDeviceGetCount(&count); rc != kCudaSuccess) {
      a.why_not = "No usable CUDA driver: cuDeviceGetCount failed with " +
                  cuda_error_string(*libs, rc) + ".";
      return a;
    }
    if (count <= 0) {
      a.why_not =
          "Found no CUDA device: the driver (libcuda at " + libs->libcuda_path + ") reports none.";
      return a;
    }
    a.available = true;
    return a;
  }();
  if (why_not) *why_not = availability.why_not;
  return availability.available;
}

}  // namespace tilefuse::cuda
