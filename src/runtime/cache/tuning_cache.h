// The tuning cache (DESIGN.md, "caches"): autotuning results (any JSON
// value: the winning config, the timings, …) stored under
// <cache root>/tuning, keyed by a string the caller builds from what the
// result depends on — the canonical program, the shapes, the dtypes, the
// device and the tilefuse version (TuningKey builds one).
//
// Entry payload (inside the DiskCache entry format of disk_cache.h): JSON
//   {"format": "tilefuse-tuning-1", "key": <key material>, "value": <value>}
// The key material is stored and compared on get(), so even a collision of
// the 128-bit key hash cannot return another program's result. An entry that
// does not parse or whose material differs is a miss and is replaced by the
// next put().
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cache/disk_cache.h"

namespace tilefuse::cache {

// What a tuning result depends on, serialized canonically by material().
struct TuningKey {
  std::string program;                            // the canonical program text
  std::vector<std::vector<std::int64_t>> shapes;  // per input, in parameter order
  std::vector<std::string> dtypes;                // per input, e.g. "f16"
  std::string device;                             // e.g. "NVIDIA H200 sm_90a"
  std::string version = TILEFUSE_VERSION;         // the tilefuse version
  std::string extra;                              // anything else the result depends on

  // A compact JSON text of every field (keys sorted), the key material for
  // TuningCache.
  std::string material() const;
};

class TuningCache {
 public:
  // Entries live directly in `dir` (normally <root>/tuning).
  explicit TuningCache(std::string dir, DiskCache::WarningSink warn = {});

  // `key_material` should be UTF-8 (as TuningKey::material() is): other
  // bytes are stored replaced, so such material never hits.
  //
  // The stored value for `key_material`, or nullopt on a miss (absent,
  // corrupt or unreadable entry, or one stored for other material). Never
  // throws for I/O problems.
  std::optional<nlohmann::json> get(const std::string& key_material) const;

  // Stores `value` atomically; false (after the warning sink) when the cache
  // cannot be written. Strings in `value` that are not UTF-8 are stored with
  // U+FFFD in their place.
  bool put(const std::string& key_material, const nlohmann::json& value) const;

  // The DiskCache key of `key_material` (hash_key_hex of it).
  static std::string key_of(const std::string& key_material);

  const DiskCache& store() const { return store_; }

 private:
  DiskCache store_;
};

// <default_cache_root()>/tuning.
std::string default_tuning_cache_dir();

// The tuning cache at default_tuning_cache_dir() (at `root`/tuning when
// `root` is not empty: a caller's option, which also keeps the cache on
// under TILEFUSE_NO_CACHE), or nullopt when caching is disabled
// (TILEFUSE_NO_CACHE, see cache_enabled()).
std::optional<TuningCache> default_tuning_cache(DiskCache::WarningSink warn = {},
                                                const std::string& root = "");

}  // namespace tilefuse::cache
