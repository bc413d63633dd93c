// The on-disk caches (DESIGN.md, "Backends and runtime", "caches"): a generic
// content-addressed store of byte strings, one file per key, that the kernel
// cache (kernel_cache.h) and the tuning cache (tuning_cache.h) build on.
//
// Entry file format (every integer little-endian), DiskCache::kHeaderBytes
// bytes of header then the payload:
//
//   offset  size  field
//        0     8  magic "TFCACHE\0"
//        8     4  format version (DiskCache::kFormatVersion)
//       12     4  reserved, 0
//       16     8  payload length in bytes
//       24     8  XXH64 (seed 0) of the key string, so an entry copied or
//                 renamed onto another key is not mistaken for it
//       32     8  XXH64 (seed 0) of the payload
//       40     …  payload
//
// Guarantees:
//  * put() is atomic: the entry is written to a uniquely named temporary file
//    in the same directory (".tmp.<key>.<pid>.<thread>.<random>") and
//    rename(2)d over the entry. Readers see the old entry or the new one,
//    never a mix; concurrent writers of one key (threads or processes) are
//    fine: the last rename wins and every entry is valid.
//  * get() validates the whole file (size, magic, version, key hash, payload
//    hash). Anything wrong — truncated, garbage, a flipped byte, a directory
//    or unreadable file where the entry should be, a file over
//    kMaxEntryBytes, anything but a regular file (a FIFO, a device, a
//    symlink, which could point out of the cache: none is opened to read) —
//    is a miss; the next put() of that key replaces the bad entry.
//  * I/O problems never throw: an unwritable cache makes put() return false
//    (and call the warning sink), an unreadable one makes get() miss. A
//    compile with a broken cache is only slower.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tilefuse::cache {

// Looks up an environment variable; nullptr when it is not set. Lets tests
// pass a fake environment.
using EnvLookup = std::function<const char*(const char*)>;

// The process environment (std::getenv).
EnvLookup process_environment();

// The root directory of every tilefuse cache:
//   $TILEFUSE_CACHE_DIR when set and non-empty (used as is, tests use it);
//   else $XDG_CACHE_HOME/tilefuse when XDG_CACHE_HOME is an absolute path;
//   else $HOME/.cache/tilefuse when HOME is set and non-empty;
//   else <temp dir>/tilefuse-cache.
// The directory is not created here; DiskCache::put creates it on demand.
std::string default_cache_root(const EnvLookup& env = process_environment());

// False when caching is disabled: TILEFUSE_NO_CACHE is set to anything but
// "", "0", "false", "no" or "off" (so TILEFUSE_NO_CACHE=1 disables it).
bool cache_enabled(const EnvLookup& env = process_environment());

// Lower-case hexadecimal of `bytes` (two digits a byte, in order).
std::string to_hex(std::string_view bytes);

// The 32 lower-case hex digits of XXH3-128 of `material`: the key used by the
// kernel and tuning caches.
std::string hash_key_hex(std::string_view material);

// Why get() missed; kHit when it did not.
enum class Lookup {
  kHit,
  kAbsent,      // no entry file (or the cache directory does not exist)
  kCorrupt,     // the file exists but fails validation (size, magic, version, hashes)
  kUnreadable,  // the file exists but cannot be opened or read, or is not a regular file
};

// "hit", "absent", "corrupt", "unreadable".
const char* lookup_name(Lookup lookup);

class DiskCache {
 public:
  static constexpr std::uint32_t kFormatVersion = 1;
  // The largest entry file get() reads (a cubin or a tuning record is far
  // smaller); a larger file is corrupt, never loaded into memory.
  static constexpr std::uint64_t kMaxEntryBytes = std::uint64_t{256} << 20;
  static constexpr std::size_t kHeaderBytes = 40;
  static constexpr std::size_t kMaxKeyLength = 128;

  // Receives a one-line message for each failed put() (the cache is left as
  // it was and the caller carries on).
  using WarningSink = std::function<void(const std::string& message)>;

  // A cache whose entries live directly in `dir` (created by the first put()).
  // `warn` may be empty: failures are then reported by put()'s result only.
  explicit DiskCache(std::string dir, WarningSink warn = {});

  const std::string& dir() const { return dir_; }

  // The entry's payload, or nullopt on any miss; `why` (optional) gets the
  // reason. Never throws for I/O problems. `key_hex` must be 1 to
  // kMaxKeyLength characters of [0-9a-f]; any other key throws InternalError
  // (a bug in the caller, not a cache problem).
  std::optional<std::string> get(std::string_view key_hex, Lookup* why = nullptr) const;

  // Stores `bytes` under `key_hex` atomically, replacing any entry (valid or
  // not). Returns false — after calling the warning sink, and leaving no
  // temporary file behind — when the directory cannot be created or the
  // entry cannot be written or renamed into place. Key rules as for get().
  bool put(std::string_view key_hex, std::string_view bytes) const;

  // Deletes the entry of `key_hex` if there is one; false when there was
  // none or it could not be removed.
  bool remove(std::string_view key_hex) const;

  // The path of the entry file of `key_hex`: <dir>/<key_hex>.tfc.
  std::string entry_path(std::string_view key_hex) const;

  // Removes temporary files (".tmp.*") at least `min_age_seconds` old, which
  // a writer killed between write and rename leaves behind. Returns how many
  // were removed; errors are ignored.
  int remove_stale_temp_files(long min_age_seconds = 3600) const;

 private:
  void warn(const std::string& message) const;

  std::string dir_;
  WarningSink warn_;
};

}  // namespace tilefuse::cache
