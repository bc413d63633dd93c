// The content-addressed on-disk store (see disk_cache.h).
#include "runtime/cache/disk_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <thread>

#include "core/error.h"

namespace tilefuse::cache {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'T', 'F', 'C', 'A', 'C', 'H', 'E', '\0'};
constexpr const char* kEntrySuffix = ".tfc";
constexpr const char* kTempPrefix = ".tmp.";

void store_u32(char* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void store_u64(char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
std::uint32_t load_u32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
std::uint64_t load_u64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

std::uint64_t xxh64(std::string_view s) {
  return XXH64(s.data(), s.size(), 0);
}

void check_key(std::string_view key) {
  bool ok = !key.empty() && key.size() <= DiskCache::kMaxKeyLength;
  for (char c : key) ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  if (!ok) {
    throw InternalError("invalid disk cache key '" + std::string(key.substr(0, 200)) +
                        "': expected 1 to 128 lower-case hex digits");
  }
}

// Closes a file descriptor on every path.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads exactly `size` bytes at the current offset; false on error or EOF.
bool read_all(int fd, char* out, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::read(fd, out, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Writes all of `data`; false (errno set) on error.
bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// A temporary name no other writer uses: the pid, a hash of the thread id, a
// per-process counter and 64 random bits (the generator is reseeded after a
// fork because the pid changes).
std::string unique_temp_suffix() {
  static std::atomic<std::uint64_t> counter{0};
  thread_local std::mt19937_64 rng;
  thread_local pid_t seeded_pid = 0;
  const pid_t pid = ::getpid();
  if (seeded_pid != pid) {
    std::random_device rd;
    const std::uint64_t t = static_cast<std::uint64_t>(
        std::chrono::high_resolution_clock::now().time_since_epoch().count());
    std::seed_seq seq{rd(), rd(), static_cast<unsigned>(pid), static_cast<unsigned>(t),
                      static_cast<unsigned>(t >> 32)};
    rng.seed(seq);
    seeded_pid = pid;
  }
  const std::size_t tid = std::hash<std::thread::id>{}(std::this_thread::get_id());
  char buf[96];
  std::snprintf(buf, sizeof buf, "%ld.%zx.%llu.%016llx", static_cast<long>(pid), tid,
                static_cast<unsigned long long>(counter.fetch_add(1)),
                static_cast<unsigned long long>(rng()));
  return buf;
}

bool env_is_false(const char* v) {
  if (v == nullptr) return true;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s.empty() || s == "0" || s == "false" || s == "no" || s == "off";
}

}  // namespace

EnvLookup process_environment() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

std::string default_cache_root(const EnvLookup& env) {
  const char* override_dir = env("TILEFUSE_CACHE_DIR");
  if (override_dir != nullptr && override_dir[0] != '\0') return override_dir;
  const char* xdg = env("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/tilefuse";
  const char* home = env("HOME");
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/tilefuse";
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  return (tmp / "tilefuse-cache").string();
}

bool cache_enabled(const EnvLookup& env) {
  return env_is_false(env("TILEFUSE_NO_CACHE"));
}

std::string to_hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4];
    out += digits[b & 0xf];
  }
  return out;
}

std::string hash_key_hex(std::string_view material) {
  const XXH128_hash_t h = XXH3_128bits(material.data(), material.size());
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

const char* lookup_name(Lookup lookup) {
  switch (lookup) {
    case Lookup::kHit:
      return "hit";
    case Lookup::kAbsent:
      return "absent";
    case Lookup::kCorrupt:
      return "corrupt";
    case Lookup::kUnreadable:
      return "unreadable";
  }
  return "unknown";
}

DiskCache::DiskCache(std::string dir, WarningSink warn)
    : dir_(std::move(dir)), warn_(std::move(warn)) {}

std::string DiskCache::entry_path(std::string_view key_hex) const {
  check_key(key_hex);
  return dir_ + "/" + std::string(key_hex) + kEntrySuffix;
}

void DiskCache::warn(const std::string& message) const {
  if (warn_) warn_(message);
}

std::optional<std::string> DiskCache::get(std::string_view key_hex, Lookup* why) const {
  Lookup dummy;
  Lookup& reason = why != nullptr ? *why : dummy;
  const std::string path = entry_path(key_hex);

  Fd file;
  // Only a regular file inside the cache is an entry: O_NOFOLLOW refuses a
  // symlink (which could point anywhere), O_NONBLOCK keeps a FIFO named like
  // an entry from blocking the open (fstat then refuses it, and a device).
  do {
    file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  } while (file.fd < 0 && errno == EINTR);
  if (file.fd < 0) {
    reason = (errno == ENOENT || errno == ENOTDIR) ? Lookup::kAbsent : Lookup::kUnreadable;
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    reason = Lookup::kUnreadable;
    return std::nullopt;
  }
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  if (file_size > kMaxEntryBytes) {  // no entry is this big: not read into memory
    reason = Lookup::kCorrupt;
    return std::nullopt;
  }
  if (file_size < kHeaderBytes) {
    reason = Lookup::kCorrupt;
    return std::nullopt;
  }
  char header[kHeaderBytes];
  if (!read_all(file.fd, header, kHeaderBytes)) {
    reason = Lookup::kUnreadable;
    return std::nullopt;
  }
  const std::uint64_t length = load_u64(header + 16);
  if (std::memcmp(header, kMagic, sizeof kMagic) != 0 || load_u32(header + 8) != kFormatVersion ||
      load_u32(header + 12) != 0 || length != file_size - kHeaderBytes ||
      load_u64(header + 24) != xxh64(key_hex)) {
    reason = Lookup::kCorrupt;
    return std::nullopt;
  }
  std::string payload(static_cast<std::size_t>(length), '\0');
  if (!read_all(file.fd, payload.data(), payload.size())) {
    // The size was checked, so a short read means the file changed under us
    // or an I/O error: either way the bytes cannot be trusted.
    reason = Lookup::kCorrupt;
    return std::nullopt;
  }
  if (xxh64(payload) != load_u64(header + 32)) {
    reason = Lookup::kCorrupt;
    return std::nullopt;
  }
  reason = Lookup::kHit;
  return payload;
}

bool DiskCache::put(std::string_view key_hex, std::string_view bytes) const {
  const std::string path = entry_path(key_hex);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) {
    warn("cannot create the cache directory " + dir_ + ": " + ec.message());
    return false;
  }

  char header[kHeaderBytes];
  std::memcpy(header, kMagic, sizeof kMagic);
  store_u32(header + 8, kFormatVersion);
  store_u32(header + 12, 0);
  store_u64(header + 16, bytes.size());
  store_u64(header + 24, xxh64(key_hex));
  store_u64(header + 32, xxh64(bytes));

  const std::string tmp =
      dir_ + "/" + kTempPrefix + std::string(key_hex) + "." + unique_temp_suffix();
  int fd;
  do {
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    warn("cannot write the cache entry " + tmp + ": " + std::strerror(errno));
    return false;
  }
  bool ok = write_all(fd, header, kHeaderBytes) && write_all(fd, bytes.data(), bytes.size());
  int saved_errno = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    saved_errno = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    warn("cannot write the cache entry " + tmp + ": " + std::strerror(saved_errno));
    return false;
  }
  // No fsync: a crash may leave a torn entry after the rename on some file
  // systems, and get() rejects it by its hash; durability is not needed.
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    saved_errno = errno;
    ::unlink(tmp.c_str());
    warn("cannot rename the cache entry into place at " + path + ": " + std::strerror(saved_errno));
    return false;
  }
  return true;
}

bool DiskCache::remove(std::string_view key_hex) const {
  return ::unlink(entry_path(key_hex).c_str()) == 0;
}

int DiskCache::remove_stale_temp_files(long min_age_seconds) const {
  int removed = 0;
  std::error_code ec;
  const auto now = std::chrono::system_clock::now();
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::directory_entry& entry = *it;
    const std::string name = entry.path().filename().string();
    if (name.rfind(kTempPrefix, 0) != 0) continue;
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const auto mtime = std::chrono::system_clock::from_time_t(st.st_mtime);
    if (now - mtime < std::chrono::seconds(min_age_seconds)) continue;
    if (::unlink(entry.path().c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace tilefuse::cache
