// The on-disk caches (src/runtime/cache): the content-addressed store
// (round trip, every kind of corrupt entry is a miss and is rebuilt, an
// unwritable cache fails softly, four processes writing the same keys leave
// a valid cache and no temporary files), the tuning cache, and the kernel
// cache over NVRTC (skipped where NVRTC cannot be loaded).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xxhash.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/scoped_env.h"
#include "core/error.h"
#include "runtime/cache/disk_cache.h"
#include "runtime/cache/kernel_cache.h"
#include "runtime/cache/tuning_cache.h"
#include "runtime/cuda/device_headers.h"
#include "runtime/cuda/nvrtc.h"

namespace tilefuse::cache {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A fresh directory (mkdtemp), removed with its contents at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tf-cache-test-XXXXXX").string();
    char* made = ::mkdtemp(tmpl.data());
    if (made == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

using tilefuse::testing::ScopedEnv;

EnvLookup fake_env(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Every file name in `dir` (not recursive).
std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  return names;
}

int count_temp_files(const std::string& dir) {
  int n = 0;
  for (const std::string& name : list_dir(dir)) n += name.rfind(".tmp.", 0) == 0 ? 1 : 0;
  return n;
}

const std::string kKey = "0123456789abcdef0123456789abcdef";

TEST(CacheRoot, DefaultRootFollowsTheEnvironment) {
  EXPECT_EQ(default_cache_root(fake_env({{"TILEFUSE_CACHE_DIR", "/x/override"},
                                         {"XDG_CACHE_HOME", "/xdg"},
                                         {"HOME", "/home/u"}})),
            "/x/override");
  EXPECT_EQ(default_cache_root(fake_env({{"XDG_CACHE_HOME", "/xdg"}, {"HOME", "/home/u"}})),
            "/xdg/tilefuse");
  // A relative XDG_CACHE_HOME is invalid (XDG Base Directory spec): ignored.
  EXPECT_EQ(default_cache_root(fake_env({{"XDG_CACHE_HOME", "rel"}, {"HOME", "/home/u"}})),
            "/home/u/.cache/tilefuse");
  EXPECT_EQ(default_cache_root(fake_env({{"TILEFUSE_CACHE_DIR", ""}, {"HOME", "/home/u"}})),
            "/home/u/.cache/tilefuse");
  EXPECT_FALSE(default_cache_root(fake_env({})).empty());
}

TEST(CacheRoot, NoCacheDisablesCaching) {
  EXPECT_TRUE(cache_enabled(fake_env({})));
  EXPECT_TRUE(cache_enabled(fake_env({{"TILEFUSE_NO_CACHE", "0"}})));
  EXPECT_TRUE(cache_enabled(fake_env({{"TILEFUSE_NO_CACHE", ""}})));
  EXPECT_FALSE(cache_enabled(fake_env({{"TILEFUSE_NO_CACHE", "1"}})));
  EXPECT_FALSE(cache_enabled(fake_env({{"TILEFUSE_NO_CACHE", "yes"}})));
}

TEST(CacheKey, HashKeyIs32HexDigitsAndDependsOnEveryByte) {
  const std::string a = hash_key_hex("abc");
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(a, hash_key_hex("abc"));
  EXPECT_NE(a, hash_key_hex("abd"));
  EXPECT_EQ(to_hex(std::string("\x00\xff\x10", 3)), "00ff10");
}

TEST(DiskCache, PutThenGetRoundTrips) {
  TempDir tmp;
  DiskCache cache(tmp.sub("store"));  // created on demand
  Lookup why = Lookup::kHit;
  EXPECT_FALSE(cache.get(kKey, &why).has_value());
  EXPECT_EQ(why, Lookup::kAbsent);

  std::string binary(1 << 20, '\0');
  for (std::size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i * 131 + 7);
  ASSERT_TRUE(cache.put(kKey, binary));
  ASSERT_TRUE(cache.put("ab", ""));
  std::optional<std::string> got = cache.get(kKey, &why);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(why, Lookup::kHit);
  EXPECT_EQ(*got, binary);
  EXPECT_EQ(cache.get("ab"), std::optional<std::string>(""));

  // A put replaces the entry.
  ASSERT_TRUE(cache.put(kKey, "second"));
  EXPECT_EQ(cache.get(kKey), std::optional<std::string>("second"));
  EXPECT_EQ(read_file(cache.entry_path(kKey)).size(), DiskCache::kHeaderBytes + 6);
  EXPECT_EQ(count_temp_files(cache.dir()), 0);

  EXPECT_TRUE(cache.remove(kKey));
  EXPECT_FALSE(cache.get(kKey).has_value());
  EXPECT_FALSE(cache.remove(kKey));
}

TEST(DiskCache, InvalidKeysAreRejected) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  EXPECT_THROW(cache.get(""), InternalError);
  EXPECT_THROW(cache.get("../etc"), InternalError);
  EXPECT_THROW(cache.put("ABCDEF", "x"), InternalError);
  EXPECT_THROW(cache.put(std::string(129, 'a'), "x"), InternalError);
}

// Each corruption of a valid entry is a miss (kCorrupt); the next put
// rebuilds a valid entry.
TEST(DiskCache, CorruptEntriesAreMissesAndRebuilt) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  const std::string payload = "the payload of a cache entry, long enough to cut in places";
  ASSERT_TRUE(cache.put(kKey, payload));
  const std::string good = read_file(cache.entry_path(kKey));
  ASSERT_EQ(good.size(), DiskCache::kHeaderBytes + payload.size());

  std::vector<std::pair<std::string, std::string>> corruptions;
  corruptions.push_back({"empty file", ""});
  corruptions.push_back({"truncated header", good.substr(0, 10)});
  corruptions.push_back({"header only", good.substr(0, DiskCache::kHeaderBytes)});
  corruptions.push_back({"truncated payload", good.substr(0, good.size() - 1)});
  corruptions.push_back({"trailing byte", good + "x"});
  corruptions.push_back({"garbage", std::string(200, 'g')});
  for (std::size_t offset :
       {std::size_t{0}, std::size_t{8}, std::size_t{12}, std::size_t{16}, std::size_t{24},
        std::size_t{32}, DiskCache::kHeaderBytes, good.size() - 1}) {
    std::string flipped = good;
    flipped[offset] = static_cast<char>(flipped[offset] ^ 0x01);
    corruptions.push_back({"byte " + std::to_string(offset) + " flipped", flipped});
  }
  for (const auto& [what, bytes] : corruptions) {
    SCOPED_TRACE(what);
    write_file(cache.entry_path(kKey), bytes);
    Lookup why = Lookup::kHit;
    EXPECT_FALSE(cache.get(kKey, &why).has_value());
    EXPECT_EQ(why, Lookup::kCorrupt);
    ASSERT_TRUE(cache.put(kKey, payload));
    EXPECT_EQ(cache.get(kKey, &why), std::optional<std::string>(payload));
    EXPECT_EQ(why, Lookup::kHit);
  }
  EXPECT_EQ(count_temp_files(cache.dir()), 0);
}

// The header records the key's hash: a valid entry copied under another key
// is not returned for it.
TEST(DiskCache, EntryUnderTheWrongKeyIsAMiss) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  ASSERT_TRUE(cache.put("aa", "payload of aa"));
  fs::copy_file(cache.entry_path("aa"), cache.entry_path("bb"));
  Lookup why = Lookup::kHit;
  EXPECT_FALSE(cache.get("bb", &why).has_value());
  EXPECT_EQ(why, Lookup::kCorrupt);
  EXPECT_EQ(cache.get("aa"), std::optional<std::string>("payload of aa"));
}

// A cache directory that cannot be created (its parent is a regular file:
// this holds even for root) makes put() fail softly and get() miss.
TEST(DiskCache, UnwritableDirectoryFailsSoftly) {
  TempDir tmp;
  write_file(tmp.sub("file"), "not a directory");
  std::vector<std::string> warnings;
  DiskCache cache(tmp.sub("file") + "/cache",
                  [&](const std::string& message) { warnings.push_back(message); });
  bool ok = true;
  EXPECT_NO_THROW(ok = cache.put(kKey, "bytes"));
  EXPECT_FALSE(ok);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("cannot create the cache directory"), std::string::npos)
      << warnings[0];
  Lookup why = Lookup::kHit;
  EXPECT_FALSE(cache.get(kKey, &why).has_value());
  EXPECT_EQ(why, Lookup::kAbsent);

  // No warning sink: the result alone reports it.
  DiskCache silent(tmp.sub("file") + "/cache");
  EXPECT_FALSE(silent.put(kKey, "bytes"));
}

// A directory where the entry file should be: get() cannot read it (a miss),
// put() cannot rename over it (fails softly, no temporary file left).
TEST(DiskCache, UnreadableEntryIsAMissAndPutFailsSoftly) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  fs::create_directories(cache.entry_path(kKey));
  Lookup why = Lookup::kHit;
  EXPECT_FALSE(cache.get(kKey, &why).has_value());
  EXPECT_EQ(why, Lookup::kUnreadable);
  EXPECT_FALSE(cache.put(kKey, "bytes"));
  EXPECT_EQ(count_temp_files(cache.dir()), 0);
}

// Where permissions apply (not root), a read-only cache directory fails
// softly as well.
TEST(DiskCache, ReadOnlyDirectoryFailsSoftlyForNonRoot) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  TempDir tmp;
  DiskCache cache(tmp.path());
  ASSERT_TRUE(cache.put(kKey, "old"));
  fs::permissions(tmp.path(), fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_FALSE(cache.put(kKey, "new"));
  EXPECT_EQ(cache.get(kKey), std::optional<std::string>("old"));
}

TEST(DiskCache, StaleTemporaryFilesAreRemoved) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  ASSERT_TRUE(cache.put(kKey, "entry"));
  write_file(tmp.sub(".tmp." + kKey + ".123.abc.0.0"), "left by a killed writer");
  EXPECT_EQ(cache.remove_stale_temp_files(3600), 0);  // too recent
  EXPECT_EQ(cache.remove_stale_temp_files(0), 1);
  EXPECT_EQ(count_temp_files(tmp.path()), 0);
  EXPECT_EQ(cache.get(kKey), std::optional<std::string>("entry"));
}

// The payload child `c` writes for key `k` in iteration `i`: a header naming
// them, then a deterministic body of a length between 1 and 40000 bytes, so
// that a torn or mixed entry would not verify.
std::string concurrent_payload(int c, int i, int k) {
  const std::string head =
      "c=" + std::to_string(c) + " i=" + std::to_string(i) + " k=" + std::to_string(k) + ";";
  std::uint64_t state = XXH64(head.data(), head.size(), 42);
  const std::size_t length = 1 + state % 40000;
  std::string body(length, '\0');
  for (std::size_t j = 0; j < length; ++j) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    body[j] = static_cast<char>(state >> 56);
  }
  return head + body;
}

// True when `bytes` is exactly one of the payloads written for key `k`.
bool is_written_payload(const std::string& bytes, int k, int children, int iterations) {
  int c = -1, i = -1, kk = -1;
  if (std::sscanf(bytes.c_str(), "c=%d i=%d k=%d;", &c, &i, &kk) != 3) return false;
  if (kk != k || c < 0 || c >= children || i < 0 || i >= iterations) return false;
  return bytes == concurrent_payload(c, i, k);
}

constexpr int kChildren = 4;
constexpr int kIterations = 200;
constexpr int kKeys = 3;

std::string concurrent_key(int k) {
  return hash_key_hex("concurrent key " + std::to_string(k));
}

// Runs `body(child)` in kChildren forked processes at once; returns each
// child's exit status (0: success).
std::vector<int> run_children(const std::function<int(int)>& body) {
  std::vector<pid_t> pids;
  for (int c = 0; c < kChildren; ++c) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int rc = 99;
      try {
        rc = body(c);
      } catch (...) {
        rc = 98;
      }
      ::_exit(rc);
    }
    pids.push_back(pid);
  }
  std::vector<int> statuses;
  for (pid_t pid : pids) {
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid) {
      statuses.push_back(-1);
    } else {
      statuses.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
  }
  return statuses;
}

// "Four processes tuning the same program at once leave a valid cache": four
// processes put and get the same keys 200 times each with different valid
// payloads. Every get they make is a hit on some payload written for that
// key; afterwards every entry is valid and no temporary file is left.
TEST(DiskCache, FourProcessesWritingTheSameKeysLeaveAValidCache) {
  TempDir tmp;
  const std::string dir = tmp.sub("kernels");
  const std::vector<int> statuses = run_children([&](int c) {
    DiskCache cache(dir);
    for (int i = 0; i < kIterations; ++i) {
      for (int k = 0; k < kKeys; ++k) {
        if (!cache.put(concurrent_key(k), concurrent_payload(c, i, k))) return 1;
        std::optional<std::string> got = cache.get(concurrent_key(k));
        if (!got) return 2;
        if (!is_written_payload(*got, k, kChildren, kIterations)) return 3;
      }
    }
    return 0;
  });
  for (int c = 0; c < kChildren; ++c) EXPECT_EQ(statuses[c], 0) << "child " << c;

  DiskCache cache(dir);
  for (int k = 0; k < kKeys; ++k) {
    std::optional<std::string> got = cache.get(concurrent_key(k));
    ASSERT_TRUE(got.has_value()) << "key " << k;
    EXPECT_TRUE(is_written_payload(*got, k, kChildren, kIterations)) << "key " << k;
  }
  const std::vector<std::string> names = list_dir(dir);
  EXPECT_EQ(names.size(), static_cast<std::size_t>(kKeys));
  EXPECT_EQ(count_temp_files(dir), 0);
}

TEST(TuningCache, PutThenGetRoundTrips) {
  TempDir tmp;
  TuningCache cache(tmp.sub("tuning"));
  TuningKey key;
  key.program = "def f(x: f16[64, 64]):\n    return x @ x\n";
  key.shapes = {{64, 64}};
  key.dtypes = {"f16"};
  key.device = "NVIDIA H200 sm_90a";
  const std::string material = key.material();
  EXPECT_FALSE(cache.get(material).has_value());
  const json value = {{"config", {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"num_stages", 3}}},
                      {"time_us", 12.5}};
  ASSERT_TRUE(cache.put(material, value));
  EXPECT_EQ(cache.get(material), std::optional<json>(value));
  ASSERT_TRUE(cache.put(material, json{{"config", "other"}}));
  EXPECT_EQ(cache.get(material), std::optional<json>(json{{"config", "other"}}));
}

TEST(TuningCache, KeyMaterialCoversEveryField) {
  TuningKey base;
  base.program = "p";
  base.shapes = {{2, 3}};
  base.dtypes = {"f16"};
  base.device = "dev";
  EXPECT_EQ(base.version, TILEFUSE_VERSION);
  std::vector<TuningKey> variants(6, base);
  variants[0].program = "q";
  variants[1].shapes = {{3, 2}};
  variants[2].dtypes = {"bf16"};
  variants[3].device = "dev2";
  variants[4].version = "0.0.0-other";
  variants[5].extra = "x";
  for (const TuningKey& v : variants) {
    EXPECT_NE(v.material(), base.material());
    EXPECT_NE(TuningCache::key_of(v.material()), TuningCache::key_of(base.material()));
  }
  EXPECT_EQ(base.material(), TuningKey(base).material());
}

TEST(TuningCache, CorruptOrForeignEntriesAreMisses) {
  TempDir tmp;
  TuningCache cache(tmp.path());
  const std::string material = "program A";
  const std::string path = cache.store().entry_path(TuningCache::key_of(material));
  const json value = {{"best", 3}};

  // Valid DiskCache entries whose payload is not a tuning entry of `material`.
  for (const std::string& payload :
       {std::string("not json"), std::string("[1, 2]"),
        json{{"format", "tilefuse-tuning-1"}, {"key", "program B"}, {"value", 1}}.dump(),
        json{{"format", "other"}, {"key", material}, {"value", 1}}.dump(),
        json{{"format", "tilefuse-tuning-1"}, {"key", material}}.dump()}) {
    SCOPED_TRACE(payload);
    ASSERT_TRUE(cache.store().put(TuningCache::key_of(material), payload));
    EXPECT_FALSE(cache.get(material).has_value());
    ASSERT_TRUE(cache.put(material, value));
    EXPECT_EQ(cache.get(material), std::optional<json>(value));
  }
  // A flipped byte in the file.
  std::string bytes = read_file(path);
  bytes[bytes.size() / 2] ^= 0x20;
  write_file(path, bytes);
  EXPECT_FALSE(cache.get(material).has_value());
  ASSERT_TRUE(cache.put(material, value));
  EXPECT_EQ(cache.get(material), std::optional<json>(value));
}

// Four processes tune the same program at once: each looks the result up,
// "tunes" when it misses or after every few iterations, and stores its
// result. Every lookup that hits returns one complete stored result.
TEST(TuningCache, FourProcessesTuningTheSameProgramLeaveAValidCache) {
  TempDir tmp;
  const std::string dir = tmp.sub("tuning");
  TuningKey key;
  key.program = "def f(x: f16[128, 128], y: f16[128, 128]):\n    return x @ y\n";
  key.shapes = {{128, 128}, {128, 128}};
  key.dtypes = {"f16", "f16"};
  key.device = "test device";
  const std::string material = key.material();
  auto valid = [](const json& v) {
    if (!v.is_object() || !v.contains("child") || !v.contains("iter") || !v.contains("timings"))
      return false;
    const int c = v["child"].get<int>(), i = v["iter"].get<int>();
    return c >= 0 && c < kChildren && i >= 0 && i < kIterations &&
           v["timings"].size() == static_cast<std::size_t>(50 + i);
  };
  const std::vector<int> statuses = run_children([&](int c) {
    TuningCache cache(dir);
    for (int i = 0; i < kIterations; ++i) {
      std::optional<json> got = cache.get(material);
      if (got && !valid(*got)) return 3;
      if (!got || i % 3 == c % 3) {
        json timings = json::array();
        for (int t = 0; t < 50 + i; ++t) timings.push_back(c * 1000 + t);
        if (!cache.put(material, {{"child", c}, {"iter", i}, {"timings", timings}})) return 1;
      }
    }
    return 0;
  });
  for (int c = 0; c < kChildren; ++c) EXPECT_EQ(statuses[c], 0) << "child " << c;
  TuningCache cache(dir);
  std::optional<json> got = cache.get(material);
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(valid(*got));
  EXPECT_EQ(list_dir(dir).size(), 1u);
  EXPECT_EQ(count_temp_files(dir), 0);
}

TEST(TuningCache, DefaultCacheHonoursTheEnvironment) {
  TempDir tmp;
  ScopedEnv dir("TILEFUSE_CACHE_DIR", tmp.path().c_str());
  {
    ScopedEnv off("TILEFUSE_NO_CACHE", "1");
    EXPECT_FALSE(default_tuning_cache().has_value());
  }
  ScopedEnv on("TILEFUSE_NO_CACHE", nullptr);
  std::optional<TuningCache> cache = default_tuning_cache();
  ASSERT_TRUE(cache.has_value());
  EXPECT_EQ(cache->store().dir(), tmp.path() + "/tuning");
  ASSERT_TRUE(cache->put("m", json{{"v", 1}}));
  EXPECT_TRUE(fs::exists(tmp.path() + "/tuning/" + TuningCache::key_of("m") + ".tfc"));
}

cuda::CompiledKernel sample_kernel() {
  cuda::CompiledKernel k;
  k.name = "scale";
  k.arch = "sm_90a";
  k.cubin = {'\x7f', 'E', 'L', 'F', '\0', '\x01', '\xff'};
  k.log = "ptxas info    : Used 12 registers\n";
  k.usage.present = true;
  k.usage.function = "scale";
  k.usage.registers = 12;
  k.usage.stack_frame_bytes = 8;
  k.usage.spill_store_bytes = 4;
  k.usage.spill_load_bytes = 4;
  k.usage.shared_bytes = 1024;
  k.all_usage = {k.usage, cuda::PtxasUsage{}};
  return k;
}

void expect_same_usage(const cuda::PtxasUsage& a, const cuda::PtxasUsage& b) {
  EXPECT_EQ(a.present, b.present);
  EXPECT_EQ(a.function, b.function);
  EXPECT_EQ(a.registers, b.registers);
  EXPECT_EQ(a.stack_frame_bytes, b.stack_frame_bytes);
  EXPECT_EQ(a.spill_store_bytes, b.spill_store_bytes);
  EXPECT_EQ(a.spill_load_bytes, b.spill_load_bytes);
  EXPECT_EQ(a.shared_bytes, b.shared_bytes);
}

void expect_same_kernel(const cuda::CompiledKernel& a, const cuda::CompiledKernel& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.cubin, b.cubin);
  EXPECT_EQ(a.log, b.log);
  expect_same_usage(a.usage, b.usage);
  ASSERT_EQ(a.all_usage.size(), b.all_usage.size());
  for (std::size_t i = 0; i < a.all_usage.size(); ++i) {
    expect_same_usage(a.all_usage[i], b.all_usage[i]);
  }
}

TEST(KernelCache, EncodeDecodeRoundTrips) {
  const cuda::CompiledKernel k = sample_kernel();
  const std::string payload = encode_compiled_kernel(k);
  std::optional<cuda::CompiledKernel> back = decode_compiled_kernel(payload);
  ASSERT_TRUE(back.has_value());
  expect_same_kernel(*back, k);

  EXPECT_FALSE(decode_compiled_kernel("").has_value());
  EXPECT_FALSE(decode_compiled_kernel(payload.substr(0, payload.size() - 1)).has_value());
  EXPECT_FALSE(decode_compiled_kernel(payload + "x").has_value());
  EXPECT_FALSE(decode_compiled_kernel(payload.substr(0, 20)).has_value());
  std::string bad_json = payload;
  bad_json[8] = '[';
  EXPECT_FALSE(decode_compiled_kernel(bad_json).has_value());
}

TEST(KernelCache, KeyDependsOnEveryInput) {
  cuda::CompileOptions opts;
  opts.arch = "sm_80";
  opts.extra = {"--ptxas-options=-v"};
  const std::string base = kernel_cache_key("src", "k", opts, "13.0");
  EXPECT_EQ(base, kernel_cache_key("src", "k", opts, "13.0"));
  EXPECT_NE(base, kernel_cache_key("src2", "k", opts, "13.0"));
  EXPECT_NE(base, kernel_cache_key("src", "k2", opts, "13.0"));
  EXPECT_NE(base, kernel_cache_key("src", "k", opts, "12.8"));
  cuda::CompileOptions arch = opts;
  arch.arch = "sm_90a";
  EXPECT_NE(base, kernel_cache_key("src", "k", arch, "13.0"));
  cuda::CompileOptions more = opts;
  more.extra.push_back("-lineinfo");
  EXPECT_NE(base, kernel_cache_key("src", "k", more, "13.0"));
  // The headers NVRTC is given are inputs too.
  const HeaderList headers = {{"tf_a.cuh", "int a;"}};
  EXPECT_NE(base, kernel_cache_key("src", "k", opts, "13.0", headers));
  EXPECT_NE(kernel_cache_key("src", "k", opts, "13.0", headers),
            kernel_cache_key("src", "k", opts, "13.0", {{"tf_a.cuh", "int b;"}}));
  EXPECT_NE(kernel_cache_key("src", "k", opts, "13.0", headers),
            kernel_cache_key("src", "k", opts, "13.0", {{"tf_b.cuh", "int a;"}}));
  // Length prefixes: moving text between fields changes the key.
  EXPECT_NE(kernel_cache_key("ab", "c", opts, "13.0"), kernel_cache_key("a", "bc", opts, "13.0"));
  cuda::CompileOptions split = opts;
  split.extra = {"-a", "b"};
  cuda::CompileOptions joined = opts;
  joined.extra = {"-ab"};
  EXPECT_NE(kernel_cache_key("s", "k", split, "1"), kernel_cache_key("s", "k", joined, "1"));
}

// compile() keys on the embedded device headers NVRTC is given.
TEST(KernelCache, KeyCoversTheEmbeddedDeviceHeaders) {
  cuda::CompileOptions with;
  cuda::CompileOptions without;
  without.device_headers = false;
  HeaderList headers;
  for (const cuda::DeviceHeader& h : cuda::device_headers()) headers.emplace_back(h.name, h.source);
  const std::string version = cuda::nvrtc_version();
  EXPECT_EQ(KernelCache::key_for("src", "k", with),
            kernel_cache_key("src", "k", with, version, headers));
  EXPECT_EQ(KernelCache::key_for("src", "k", without),
            kernel_cache_key("src", "k", without, version));
  if (!headers.empty()) {
    EXPECT_NE(KernelCache::key_for("src", "k", with), KernelCache::key_for("src", "k", without));
  }
}

TEST(KernelCache, RecognizesPtxasReportRequests) {
  auto with = [](std::vector<std::string> extra) {
    cuda::CompileOptions o;
    o.extra = std::move(extra);
    return requests_ptxas_report(o);
  };
  EXPECT_TRUE(with({"--ptxas-options=-v"}));
  EXPECT_TRUE(with({"-Xptxas", "-v"}));
  EXPECT_TRUE(with({"-Xptxas=-O3,-v"}));
  EXPECT_TRUE(with({"--ptxas-options", "--verbose"}));
  EXPECT_FALSE(with({}));
  EXPECT_FALSE(with({"-lineinfo", "-Xptxas", "-O3"}));
  EXPECT_FALSE(with({"-v"}));
}

TEST(KernelCache, StoredKernelsRoundTripAndCorruptOnesMiss) {
  TempDir tmp;
  KernelCache cache(tmp.sub("kernels"));
  const cuda::CompiledKernel k = sample_kernel();
  EXPECT_FALSE(cache.get(kKey).has_value());
  ASSERT_TRUE(cache.put(kKey, k));
  std::optional<cuda::CompiledKernel> got = cache.get(kKey);
  ASSERT_TRUE(got.has_value());
  expect_same_kernel(*got, k);
  // A valid store entry that is not a kernel payload is a miss.
  ASSERT_TRUE(cache.store().put(kKey, "not a kernel"));
  EXPECT_FALSE(cache.get(kKey).has_value());
}

const char* kSaxpySource = R"(
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

// A kernel compiled twice through the cache: the second comes from the cache
// with the same cubin and the same ptxas usage; another option or another
// architecture is a miss; a corrupt entry is recompiled and replaced.
TEST(KernelCache, SecondCompileComesFromTheCache) {
  std::string why;
  if (cuda::load_nvrtc(&why) == nullptr) GTEST_SKIP() << why;
  TempDir tmp;
  KernelCache cache(tmp.sub("kernels"));
  cuda::CompileOptions opts;
  opts.arch = "sm_80";
  opts.extra = {"--ptxas-options=-v"};

  bool from_cache = true;
  const cuda::CompiledKernel cold = cache.compile(kSaxpySource, "saxpy", opts, &from_cache);
  EXPECT_FALSE(from_cache);
  ASSERT_FALSE(cold.cubin.empty());
  if (!cold.usage.present) {
    // ptxas -v was asked for but gave no report (seen with libcuda loaded,
    // see PtxasUsage::present): by design such a kernel is not stored.
    EXPECT_TRUE(cold.log.empty()) << "a log without a parsable report:\n" << cold.log;
    cache.compile(kSaxpySource, "saxpy", opts, &from_cache);
    EXPECT_FALSE(from_cache);
    GTEST_SKIP() << "NVRTC returned no ptxas report; the warm path is not exercised";
  }
  const cuda::CompiledKernel warm = cache.compile(kSaxpySource, "saxpy", opts, &from_cache);
  EXPECT_TRUE(from_cache);
  expect_same_kernel(warm, cold);
  EXPECT_GT(warm.usage.registers, 0);
  EXPECT_EQ(warm.usage.registers, cold.usage.registers);
  EXPECT_EQ(warm.usage.spill_store_bytes, cold.usage.spill_store_bytes);
  EXPECT_EQ(warm.usage.spill_load_bytes, cold.usage.spill_load_bytes);

  cuda::CompileOptions other_option = opts;
  other_option.extra.push_back("-lineinfo");
  cache.compile(kSaxpySource, "saxpy", other_option, &from_cache);
  EXPECT_FALSE(from_cache);
  cuda::CompileOptions other_arch = opts;
  other_arch.arch = "sm_90";
  const cuda::CompiledKernel sm90 = cache.compile(kSaxpySource, "saxpy", other_arch, &from_cache);
  EXPECT_FALSE(from_cache);
  EXPECT_EQ(sm90.arch, "sm_90");
  cache.compile(kSaxpySource + std::string("// changed\n"), "saxpy", opts, &from_cache);
  EXPECT_FALSE(from_cache);

  // Corrupt the sm_80 entry: the next compile misses, recompiles and
  // replaces it, and the one after hits again.
  const std::string key = KernelCache::key_for(kSaxpySource, "saxpy", opts);
  const std::string path = cache.store().entry_path(key);
  ASSERT_TRUE(fs::exists(path));
  std::string bytes = read_file(path);
  bytes[bytes.size() - 3] ^= 0x40;
  write_file(path, bytes);
  const cuda::CompiledKernel rebuilt = cache.compile(kSaxpySource, "saxpy", opts, &from_cache);
  EXPECT_FALSE(from_cache);
  EXPECT_EQ(rebuilt.cubin, cold.cubin);
  cache.compile(kSaxpySource, "saxpy", opts, &from_cache);
  EXPECT_TRUE(from_cache);
  EXPECT_EQ(count_temp_files(cache.store().dir()), 0);
}

// Four processes compiling the same kernels through one kernel cache at
// once (tuning runs in parallel, several `tilefuse` processes share the
// default cache): each gets a usable kernel, whichever process's entry it
// reads; afterwards each kernel has one valid entry, a later compile is a
// hit with the same cubin, and no temporary file is left.
TEST(KernelCache, FourProcessesCompilingTheSameKernelsLeaveAValidCache) {
  std::string why;
  if (cuda::load_nvrtc(&why) == nullptr) GTEST_SKIP() << why;
  TempDir tmp;
  const std::string dir = tmp.sub("kernels");
  constexpr int kKernels = 3;
  auto source = [](int k) { return kSaxpySource + std::string("// variant ") + std::to_string(k); };
  cuda::CompileOptions opts;
  opts.arch = "sm_80";
  const std::vector<int> statuses = run_children([&](int c) {
    KernelCache cache(dir);
    for (int round = 0; round < 2; ++round) {
      for (int i = 0; i < kKernels; ++i) {
        const int k = (i + c) % kKernels;  // (the children start on different kernels)
        const cuda::CompiledKernel got = cache.compile(source(k), "saxpy", opts);
        if (got.cubin.empty() || got.name != "saxpy") return 1;
        const std::optional<cuda::CompiledKernel> stored =
            cache.get(KernelCache::key_for(source(k), "saxpy", opts));
        if (!stored) return 2;
        // (NVRTC's output for one source and options is the same in every
        // process: a hit on another process's entry returns these bytes)
        if (stored->cubin != got.cubin) return 3;
      }
    }
    return 0;
  });
  for (int c = 0; c < kChildren; ++c) EXPECT_EQ(statuses[c], 0) << "child " << c;
  KernelCache cache(dir);
  for (int k = 0; k < kKernels; ++k) {
    bool from_cache = false;
    const cuda::CompiledKernel warm = cache.compile(source(k), "saxpy", opts, &from_cache);
    EXPECT_TRUE(from_cache) << "kernel " << k;
    EXPECT_FALSE(warm.cubin.empty());
  }
  EXPECT_EQ(list_dir(dir).size(), static_cast<std::size_t>(kKernels));
  EXPECT_EQ(count_temp_files(dir), 0);
}

TEST(KernelCache, CompileCudaCachedHonoursTheEnvironment) {
  std::string why;
  if (cuda::load_nvrtc(&why) == nullptr) GTEST_SKIP() << why;
  TempDir tmp;
  ScopedEnv dir("TILEFUSE_CACHE_DIR", tmp.path().c_str());
  cuda::CompileOptions opts;
  opts.arch = "sm_80";
  bool from_cache = true;
  {
    ScopedEnv off("TILEFUSE_NO_CACHE", "1");
    compile_cuda_cached(kSaxpySource, "saxpy", opts, &from_cache);
    EXPECT_FALSE(from_cache);
    compile_cuda_cached(kSaxpySource, "saxpy", opts, &from_cache);
    EXPECT_FALSE(from_cache);
    EXPECT_FALSE(fs::exists(tmp.path() + "/kernels"));
  }
  ScopedEnv on("TILEFUSE_NO_CACHE", nullptr);
  EXPECT_EQ(default_kernel_cache_dir(), tmp.path() + "/kernels");
  compile_cuda_cached(kSaxpySource, "saxpy", opts, &from_cache);
  EXPECT_FALSE(from_cache);
  compile_cuda_cached(kSaxpySource, "saxpy", opts, &from_cache);
  EXPECT_TRUE(from_cache);
  EXPECT_EQ(list_dir(tmp.path() + "/kernels").size(), 1u);
}

// An unwritable kernel cache does not fail the compile.
TEST(KernelCache, UnwritableCacheStillCompiles) {
  std::string why;
  if (cuda::load_nvrtc(&why) == nullptr) GTEST_SKIP() << why;
  TempDir tmp;
  write_file(tmp.sub("file"), "x");
  int warnings = 0;
  KernelCache cache(tmp.sub("file") + "/kernels", [&](const std::string&) { ++warnings; });
  bool from_cache = true;
  cuda::CompiledKernel k = cache.compile(kSaxpySource, "saxpy", {}, &from_cache);
  EXPECT_FALSE(from_cache);
  EXPECT_FALSE(k.cubin.empty());
  EXPECT_EQ(warnings, 1);
}

}  // namespace
}  // namespace tilefuse::cache
