// The tuning cache (see tuning_cache.h).
#include "runtime/cache/tuning_cache.h"

namespace tilefuse::cache {
namespace {

using nlohmann::json;

constexpr const char* kPayloadFormat = "tilefuse-tuning-1";
constexpr const char* kKeyTag = "tilefuse-tuning-key-1\n";

}  // namespace

std::string TuningKey::material() const {
  // nlohmann::json objects keep their keys sorted, so the text is canonical.
  const json j{{"program", program}, {"shapes", shapes},   {"dtypes", dtypes},
               {"device", device},   {"version", version}, {"extra", extra}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

TuningCache::TuningCache(std::string dir, DiskCache::WarningSink warn)
    : store_(std::move(dir), std::move(warn)) {}

std::string TuningCache::key_of(const std::string& key_material) {
  return hash_key_hex(kKeyTag + key_material);
}

std::optional<json> TuningCache::get(const std::string& key_material) const {
  std::optional<std::string> payload = store_.get(key_of(key_material));
  if (!payload) return std::nullopt;
  json entry = json::parse(*payload, nullptr, /*allow_exceptions=*/false);
  if (entry.is_discarded() || !entry.is_object()) return std::nullopt;
  const auto format = entry.find("format");
  const auto key = entry.find("key");
  const auto value = entry.find("value");
  if (format == entry.end() || key == entry.end() || value == entry.end() ||
      *format != kPayloadFormat || !key->is_string() ||
      key->get_ref<const std::string&>() != key_material) {
    return std::nullopt;
  }
  return std::move(*value);
}

bool TuningCache::put(const std::string& key_material, const json& value) const {
  const json entry{{"format", kPayloadFormat}, {"key", key_material}, {"value", value}};
  return store_.put(key_of(key_material),
                    entry.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string default_tuning_cache_dir() {
  return default_cache_root() + "/tuning";
}

std::optional<TuningCache> default_tuning_cache(DiskCache::WarningSink warn,
                                                const std::string& root) {
  if (!root.empty()) return TuningCache(root + "/tuning", std::move(warn));
  if (!cache_enabled()) return std::nullopt;
  return TuningCache(default_tuning_cache_dir(), std::move(warn));
}

}  // namespace tilefuse::cache
