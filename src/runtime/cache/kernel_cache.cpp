// The compiled-kernel cache (see kernel_cache.h).
#include "runtime/cache/kernel_cache.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "runtime/cuda/device_headers.h"

namespace tilefuse::cache {
namespace {

using nlohmann::json;

constexpr const char* kKeyTag = "tilefuse-kernel-key-1";
constexpr const char* kPayloadFormat = "tilefuse-kernel-1";

void append_field(std::string& out, std::string_view field) {
  const std::uint64_t n = field.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  out.append(field);
}

json usage_to_json(const cuda::PtxasUsage& u) {
  return json{{"present", u.present},
              {"function", u.function},
              {"registers", u.registers},
              {"stack_frame_bytes", u.stack_frame_bytes},
              {"spill_store_bytes", u.spill_store_bytes},
              {"spill_load_bytes", u.spill_load_bytes},
              {"shared_bytes", u.shared_bytes}};
}

// Throws json::exception on a missing key or a wrong type (caught by decode).
cuda::PtxasUsage usage_from_json(const json& j) {
  cuda::PtxasUsage u;
  u.present = j.at("present").get<bool>();
  u.function = j.at("function").get<std::string>();
  u.registers = j.at("registers").get<int>();
  u.stack_frame_bytes = j.at("stack_frame_bytes").get<int>();
  u.spill_store_bytes = j.at("spill_store_bytes").get<int>();
  u.spill_load_bytes = j.at("spill_load_bytes").get<int>();
  u.shared_bytes = j.at("shared_bytes").get<int>();
  return u;
}

// True when one ptxas option string (possibly a comma list) contains -v.
bool ptxas_value_has_v(std::string_view value) {
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t end = value.find(',', start);
    if (end == std::string_view::npos) end = value.size();
    const std::string_view item = value.substr(start, end - start);
    if (item == "-v" || item == "--verbose") return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

std::string kernel_cache_key(const std::string& source, const std::string& name,
                             const cuda::CompileOptions& options, const std::string& nvrtc_version,
                             const HeaderList& headers) {
  std::string material;
  material.reserve(source.size() + 256);
  append_field(material, kKeyTag);
  append_field(material, source);
  append_field(material, name);
  append_field(material, options.arch);
  append_field(material, nvrtc_version);
  append_field(material, std::to_string(options.extra.size()));
  for (const std::string& o : options.extra) append_field(material, o);
  append_field(material, std::to_string(headers.size()));
  for (const auto& [header_name, header_text] : headers) {
    append_field(material, header_name);
    append_field(material, header_text);
  }
  return hash_key_hex(material);
}

std::string encode_compiled_kernel(const cuda::CompiledKernel& kernel) {
  json all = json::array();
  for (const cuda::PtxasUsage& u : kernel.all_usage) all.push_back(usage_to_json(u));
  const json meta{{"format", kPayloadFormat},
                  {"name", kernel.name},
                  {"arch", kernel.arch},
                  // The log may hold bytes that are not UTF-8 (a source path,
                  // a locale's message); replace them rather than throw.
                  {"log", kernel.log},
                  {"cubin_bytes", kernel.cubin.size()},
                  {"usage", usage_to_json(kernel.usage)},
                  {"all_usage", std::move(all)}};
  const std::string text = meta.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(8 + text.size() + kernel.cubin.size());
  append_field(out, text);
  out.append(kernel.cubin.data(), kernel.cubin.size());
  return out;
}

std::optional<cuda::CompiledKernel> decode_compiled_kernel(std::string_view payload) {
  if (payload.size() < 8) return std::nullopt;
  std::uint64_t meta_size = 0;
  for (int i = 0; i < 8; ++i) {
    meta_size |= std::uint64_t(static_cast<unsigned char>(payload[i])) << (8 * i);
  }
  if (meta_size > payload.size() - 8) return std::nullopt;
  const std::string_view meta_text = payload.substr(8, meta_size);
  const std::string_view cubin = payload.substr(8 + meta_size);
  const json meta = json::parse(meta_text, nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded() || !meta.is_object()) return std::nullopt;
  try {
    if (meta.at("format").get<std::string>() != kPayloadFormat) return std::nullopt;
    if (meta.at("cubin_bytes").get<std::uint64_t>() != cubin.size() || cubin.empty()) {
      return std::nullopt;
    }
    cuda::CompiledKernel k;
    k.name = meta.at("name").get<std::string>();
    k.arch = meta.at("arch").get<std::string>();
    k.log = meta.at("log").get<std::string>();
    k.usage = usage_from_json(meta.at("usage"));
    for (const json& u : meta.at("all_usage")) k.all_usage.push_back(usage_from_json(u));
    k.cubin.assign(cubin.begin(), cubin.end());
    return k;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

bool requests_ptxas_report(const cuda::CompileOptions& options) {
  const std::vector<std::string>& extra = options.extra;
  for (std::size_t i = 0; i < extra.size(); ++i) {
    const std::string& o = extra[i];
    if ((o == "-Xptxas" || o == "--ptxas-options") && i + 1 < extra.size()) {
      if (ptxas_value_has_v(extra[++i])) return true;
    } else if (o.rfind("-Xptxas=", 0) == 0) {
      if (ptxas_value_has_v(std::string_view(o).substr(8))) return true;
    } else if (o.rfind("--ptxas-options=", 0) == 0) {
      if (ptxas_value_has_v(std::string_view(o).substr(16))) return true;
    }
  }
  return false;
}

std::string KernelCache::key_for(const std::string& source, const std::string& name,
                                 const cuda::CompileOptions& options) {
  // compile_cuda gives NVRTC the embedded device headers: their text is an
  // input of the compile as much as the source is.
  HeaderList headers;
  if (options.device_headers) {
    for (const cuda::DeviceHeader& h : cuda::device_headers()) {
      headers.emplace_back(h.name, h.source);
    }
  }
  return kernel_cache_key(source, name, options, cuda::nvrtc_version(), headers);
}

KernelCache::KernelCache(std::string dir, DiskCache::WarningSink warn)
    : store_(std::move(dir), std::move(warn)) {}

std::optional<cuda::CompiledKernel> KernelCache::get(const std::string& key) const {
  std::optional<std::string> payload = store_.get(key);
  if (!payload) return std::nullopt;
  return decode_compiled_kernel(*payload);
}

bool KernelCache::put(const std::string& key, const cuda::CompiledKernel& kernel) const {
  return store_.put(key, encode_compiled_kernel(kernel));
}

cuda::CompiledKernel KernelCache::compile(const std::string& source, const std::string& name,
                                          const cuda::CompileOptions& options,
                                          bool* from_cache) const {
  if (from_cache != nullptr) *from_cache = false;
  // The version is part of the key; without NVRTC there is nothing to look
  // up, and compile_cuda reports why it cannot load.
  if (cuda::load_nvrtc() == nullptr) return cuda::compile_cuda(source, name, options);
  const std::string key = key_for(source, name, options);
  if (std::optional<cuda::CompiledKernel> hit = get(key)) {
    if (hit->name == name && hit->arch == options.arch) {
      if (from_cache != nullptr) *from_cache = true;
      return std::move(*hit);
    }
  }
  cuda::CompiledKernel kernel = cuda::compile_cuda(source, name, options);
  const bool wants_report = requests_ptxas_report(options);
  // Set once an NVRTC rejected "--no-cache", so it is tried once a process.
  static std::atomic<bool> no_cache_unsupported{false};
  if (wants_report && !kernel.usage.present && !no_cache_unsupported.load()) {
    // NVRTC answered from NVIDIA's own compute cache (~/.nv/ComputeCache,
    // shared by every process of the user): the cubin is right but ptxas
    // did not run, so its -v report is missing. Seen on the H200 machine
    // with NVRTC 13.0; "--no-cache" makes that one compile run ptxas.
    // An NVRTC that does not know the option fails the retry: keep the
    // first result then.
    cuda::CompileOptions fresh = options;
    fresh.extra.push_back("--no-cache");
    try {
      cuda::CompiledKernel retried = cuda::compile_cuda(source, name, fresh);
      if (retried.usage.present) kernel = std::move(retried);
    } catch (const UserError&) {
      no_cache_unsupported = true;
    }
  }
  // A kernel whose requested report is still missing is not stored: the
  // cache never pins unknown resource usage.
  if (kernel.usage.present || !wants_report) put(key, kernel);
  return kernel;
}

std::string default_kernel_cache_dir() {
  return default_cache_root() + "/kernels";
}

cuda::CompiledKernel compile_cuda_cached(const std::string& source, const std::string& name,
                                         const cuda::CompileOptions& options, bool* from_cache,
                                         const std::string& root) {
  if (from_cache != nullptr) *from_cache = false;
  if (root.empty() && !cache_enabled()) return cuda::compile_cuda(source, name, options);
  static std::atomic<bool> warned{false};
  const KernelCache cache(root.empty() ? default_kernel_cache_dir() : root + "/kernels",
                          [](const std::string& message) {
    if (!warned.exchange(true)) {
      std::fprintf(stderr,
                   "tilefuse: warning: the kernel cache is not usable (%s); compiling without "
                   "it (set TILEFUSE_CACHE_DIR, or TILEFUSE_NO_CACHE=1 to silence this)\n",
                   message.c_str());
    }
  });
  return cache.compile(source, name, options, from_cache);
}

}  // namespace tilefuse::cache
