// NVRTC compilation (see nvrtc.h).
#include "runtime/cuda/nvrtc.h"

#include <dlfcn.h>
#include <unistd.h>

#include <xxhash.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>

#include "core/error.h"
#include "runtime/cache/disk_cache.h"
#include "runtime/cuda/device_headers.h"

namespace tilefuse::cuda {
namespace {

namespace fs = std::filesystem;

struct NvrtcLoad {
  std::unique_ptr<CudaLibraries> libs;
  std::string why_not;
};

// Opens libnvrtc alone, in the search order of loader.h, and resolves the
// NVRTC entry points of CudaLibraries (NVRTC documentation, "API Reference").
NvrtcLoad open_nvrtc_only() {
  NvrtcLoad r;
  std::string path;
  void* handle = open_library_handle(Library::kNvrtc, process_env(), &path, &r.why_not);
  if (handle == nullptr) return r;
  auto libs = std::make_unique<CudaLibraries>();
  if (!resolve_nvrtc(handle, path, *libs, &r.why_not)) {
    dlclose(handle);
    return r;
  }
  r.libs = std::move(libs);
  return r;
}

std::string nvrtc_error(const CudaLibraries& libs, nvrtcResult rc) {
  const char* s = libs.nvrtcGetErrorString ? libs.nvrtcGetErrorString(rc) : nullptr;
  return (s ? std::string(s) : std::string("unknown NVRTC error")) + " (NVRTC error " +
         std::to_string(rc) + ")";
}

// Checks an NVRTC call that should not fail on valid input.
void check(const CudaLibraries& libs, nvrtcResult rc, const char* call) {
  if (rc != kNvrtcSuccess) {
    throw InternalError(std::string(call) + " failed: " + nvrtc_error(libs, rc));
  }
}

// The NVRTC options for `options`: the architecture first, then the extra
// options, with "-Xptxas <v>" folded into "--ptxas-options=<v>" (NVRTC
// documentation, "Supported Compile Options").
std::vector<std::string> nvrtc_options(const CompileOptions& options) {
  std::vector<std::string> out;
  out.push_back("--gpu-architecture=" + options.arch);
  for (std::size_t i = 0; i < options.extra.size(); ++i) {
    const std::string& o = options.extra[i];
    if ((o == "-Xptxas" || o == "--ptxas-options") && i + 1 < options.extra.size()) {
      out.push_back("--ptxas-options=" + options.extra[++i]);
    } else if (o.rfind("-Xptxas=", 0) == 0) {
      out.push_back("--ptxas-options=" + o.substr(8));
    } else {
      out.push_back(o);
    }
  }
  return out;
}

std::string sanitize(const std::string& name) {
  std::string out;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    out += ok ? c : '_';
  }
  if (out.empty() || out[0] == '.') out = "kernel" + out;
  return out.substr(0, 64);
}

// Releases an nvrtcProgram on every path (nvrtcDestroyProgram).
struct ProgramGuard {
  const CudaLibraries* libs;
  nvrtcProgram prog = nullptr;
  ~ProgramGuard() {
    if (prog != nullptr) libs->nvrtcDestroyProgram(&prog);
  }
};

}  // namespace

const CudaLibraries* load_nvrtc(std::string* why_not) {
  static const NvrtcLoad load = open_nvrtc_only();
  if (why_not) *why_not = load.why_not;
  return load.libs.get();
}

std::string nvrtc_version() {
  const CudaLibraries* libs = load_nvrtc();
  int major = 0, minor = 0;
  if (libs == nullptr || libs->nvrtcVersion(&major, &minor) != kNvrtcSuccess) return {};
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string failed_source_dir() {
  // failed/ of the caches' root, whose rules (the TILEFUSE_CACHE_DIR
  // override, XDG, HOME, a temp-dir fallback that survives a bad TMPDIR) are
  // default_cache_root's.
  return cache::default_cache_root() + "/failed";
}

std::string save_failed_source(const std::string& source, const std::string& name) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(source.data(), source.size())));
  const std::string dir = failed_source_dir();
  const std::string path = dir + "/" + sanitize(name) + "-" + hash + ".cu";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw UserError("Cannot create " + dir + " to save the failed CUDA source: " + ec.message());
  // Atomic write: a temporary name in the same directory, then rename(2).
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << source;
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      throw UserError("Cannot write the failed CUDA source to " + tmp + ".");
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw UserError("Cannot save the failed CUDA source as " + path + ".");
  }
  return path;
}

std::vector<PtxasUsage> parse_ptxas_report(const std::string& log) {
  // ptxas -v prints, per entry function:
  //   ptxas info    : Compiling entry function 'f' for 'sm_80'
  //   ptxas info    : Function properties for f
  //       S bytes stack frame, A bytes spill stores, B bytes spill loads
  //   ptxas info    : Used R registers, [N bytes smem, ]M bytes cmem[0]
  static const std::regex props(R"(Function properties for ([^\s]+))");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::vector<PtxasUsage> out;
  std::size_t start = 0;
  PtxasUsage* current = nullptr;
  while (start <= log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(start, end - start);
    std::smatch m;
    if (std::regex_search(line, m, props)) {
      out.emplace_back();
      current = &out.back();
      current->present = true;
      current->function = m[1];
    } else if (std::regex_search(line, m, frame) && current != nullptr) {
      current->stack_frame_bytes = std::stoi(m[1]);
      current->spill_store_bytes = std::stoi(m[2]);
      current->spill_load_bytes = std::stoi(m[3]);
    } else if (std::regex_search(line, m, used)) {
      if (current == nullptr) {  // a report without a properties line
        out.emplace_back();
        current = &out.back();
        current->present = true;
      }
      current->registers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem)) current->shared_bytes = std::stoi(m[1]);
      current = nullptr;
    }
    start = end + 1;
  }
  return out;
}

CompiledKernel compile_cuda(const std::string& source, const std::string& name,
                            const CompileOptions& options) {
  std::string why_not;
  const CudaLibraries* libs = load_nvrtc(&why_not);
  if (libs == nullptr) throw UserError("Cannot compile CUDA code: " + why_not);

  CompiledKernel result;
  result.name = name;
  result.arch = options.arch;
  const std::string program_name = sanitize(name) + ".cu";

  // [Compilation] nvrtcCreateProgram: the embedded device headers, by name
  // (headers[i] is the text of the file #included as includeNames[i]).
  std::vector<std::string> header_text, header_names;
  if (options.device_headers) {
    for (const DeviceHeader& h : device_headers()) {
      header_text.emplace_back(h.source);
      header_names.emplace_back(h.name);
    }
  }
  std::vector<const char*> headers, include_names;
  for (std::size_t i = 0; i < header_text.size(); ++i) {
    headers.push_back(header_text[i].c_str());
    include_names.push_back(header_names[i].c_str());
  }
  ProgramGuard guard{libs};
  check(*libs,
        libs->nvrtcCreateProgram(&guard.prog, source.c_str(), program_name.c_str(),
                                 static_cast<int>(headers.size()),
                                 headers.empty() ? nullptr : headers.data(),
                                 include_names.empty() ? nullptr : include_names.data()),
        "nvrtcCreateProgram");

  const std::vector<std::string> opts = nvrtc_options(options);
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  const nvrtcResult rc =
      libs->nvrtcCompileProgram(guard.prog, static_cast<int>(argv.size()), argv.data());

  // [Compilation] nvrtcGetProgramLogSize counts the terminating NUL.
  std::size_t log_size = 0;
  check(*libs, libs->nvrtcGetProgramLogSize(guard.prog, &log_size), "nvrtcGetProgramLogSize");
  if (log_size > 1) {
    std::string log(log_size, '\0');
    check(*libs, libs->nvrtcGetProgramLog(guard.prog, log.data()), "nvrtcGetProgramLog");
    log.resize(log_size - 1);
    result.log = std::move(log);
  }

  if (rc != kNvrtcSuccess) {
    const std::string saved = save_failed_source(source, name);
    std::string opt_text;
    for (const std::string& o : opts) opt_text += " " + o;
    throw UserError("NVRTC could not compile the CUDA kernel '" + name + "' for " + options.arch +
                    " (" + nvrtc_error(*libs, rc) + "); the source is saved at " + saved +
                    "; options:" + opt_text + "; NVRTC log:\n" + result.log);
  }

  std::size_t cubin_size = 0;
  check(*libs, libs->nvrtcGetCUBINSize(guard.prog, &cubin_size), "nvrtcGetCUBINSize");
  if (cubin_size == 0) {
    throw InternalError("NVRTC produced no cubin for '" + name + "' (arch " + options.arch +
                        "; a virtual compute_XX architecture gives PTX only).");
  }
  result.cubin.resize(cubin_size);
  check(*libs, libs->nvrtcGetCUBIN(guard.prog, result.cubin.data()), "nvrtcGetCUBIN");

  result.all_usage = parse_ptxas_report(result.log);
  for (const PtxasUsage& u : result.all_usage) {
    if (!result.usage.present || u.function == name) result.usage = u;
  }
  return result;
}

}  // namespace tilefuse::cuda
