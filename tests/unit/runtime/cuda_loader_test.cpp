// The CUDA library loader: the documented search order (with a fake
// environment), clear messages for a missing file or a library that is not
// CUDA, and a clean "unavailable" on a machine without CUDA. Every test also
// passes where the CUDA libraries are installed: the "unavailable"
// expectations are guarded on the libraries really being absent.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/cuda.h"
#include "runtime/cuda/loader.h"

namespace tilefuse::cuda {
namespace {

using testing::fake_env;
using testing::libm_path;

// True when libcuda cannot be found anywhere without overrides, i.e. this
// machine really has no CUDA driver library.
bool libcuda_absent() {
  std::string why;
  auto libs = open_cuda_libraries(fake_env({}), &why);
  return libs == nullptr && why.find("Could not load the CUDA driver library") != std::string::npos;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(CudaLoader, CandidatePathsFollowTheDocumentedOrder) {
  EnvGetter env = fake_env({{"TILEFUSE_LIBCUDA", "/opt/driver/libcuda.so.580"},
                            {"CUDA_HOME", "/opt/cuda-home/"},
                            {"CUDA_PATH", "/opt/cuda-path"}});
  std::vector<std::string> expected = {
      "/opt/driver/libcuda.so.580",
      "/opt/cuda-home/lib64/libcuda.so.1",
      "/opt/cuda-home/targets/x86_64-linux/lib/libcuda.so.1",
      "/opt/cuda-home/lib/libcuda.so.1",
      "/opt/cuda-path/lib64/libcuda.so.1",
      "/opt/cuda-path/targets/x86_64-linux/lib/libcuda.so.1",
      "/opt/cuda-path/lib/libcuda.so.1",
      "/usr/local/cuda/lib64/libcuda.so.1",
      "/usr/local/cuda/targets/x86_64-linux/lib/libcuda.so.1",
      "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
      "/usr/lib/libcuda.so.1",
      "/usr/lib64/libcuda.so.1",
      "libcuda.so.1",
  };
  EXPECT_EQ(candidate_paths(Library::kCuda, env), expected);
}

TEST(CudaLoader, NvrtcCandidatesPreferVersion13Then12) {
  EnvGetter env = fake_env({{"TILEFUSE_LIBNVRTC", "/x/libnvrtc.so"}, {"CUDA_HOME", "/cuda"}});
  std::vector<std::string> paths = candidate_paths(Library::kNvrtc, env);
  ASSERT_GE(paths.size(), 5u);
  EXPECT_EQ(paths[0], "/x/libnvrtc.so");
  EXPECT_EQ(paths[1], "/cuda/lib64/libnvrtc.so.13");
  EXPECT_EQ(paths[2], "/cuda/lib64/libnvrtc.so.12");
  EXPECT_EQ(paths[3], "/cuda/targets/x86_64-linux/lib/libnvrtc.so.13");
  EXPECT_EQ(paths[paths.size() - 2], "libnvrtc.so.13");
  EXPECT_EQ(paths.back(), "libnvrtc.so.12");
  // The libcuda override does not leak into the NVRTC search.
  EnvGetter cuda_only = fake_env({{"TILEFUSE_LIBCUDA", "/x/libcuda.so.1"}});
  EXPECT_EQ(candidate_paths(Library::kNvrtc, cuda_only).front(),
            "/usr/local/cuda/lib64/libnvrtc.so.13");
}

TEST(CudaLoader, CandidatesHaveNoDuplicatesAndNoStubs) {
  EnvGetter env = fake_env({{"TILEFUSE_LIBCUDA", "/usr/local/cuda/lib64/stubs/libcuda.so"},
                            {"CUDA_HOME", "/usr/local/cuda"},
                            {"CUDA_PATH", "/opt/cuda/stubs/"}});
  std::vector<std::string> paths = candidate_paths(Library::kCuda, env);
  for (const std::string& p : paths) {
    EXPECT_FALSE(contains(p, "/stubs/")) << p;
    EXPECT_EQ(std::count(paths.begin(), paths.end(), p), 1) << p;
  }
  EXPECT_EQ(paths.front(), "/usr/local/cuda/lib64/libcuda.so.1");
  // Unset and empty variables add nothing.
  EnvGetter empty = fake_env({{"TILEFUSE_LIBCUDA", ""}, {"CUDA_HOME", ""}});
  std::vector<std::string> plain = candidate_paths(Library::kCuda, empty);
  EXPECT_EQ(plain, candidate_paths(Library::kCuda, fake_env({})));
  EXPECT_EQ(plain.front(), "/usr/local/cuda/lib64/libcuda.so.1");
  EXPECT_EQ(plain.back(), "libcuda.so.1");
}

// An override is authoritative: a bad one fails the load and is named, with
// or without CUDA on the machine; no other library is picked instead.
TEST(CudaLoader, MissingOverrideFileIsNamed) {
  const std::string bogus = "/nonexistent/tilefuse-test/libcuda.so.1";
  std::string why;
  auto libs = open_cuda_libraries(fake_env({{"TILEFUSE_LIBCUDA", bogus}}), &why);
  EXPECT_EQ(libs, nullptr);
  EXPECT_TRUE(contains(why, bogus + " (no such file)")) << why;
  EXPECT_TRUE(contains(why, "TILEFUSE_LIBCUDA is set, so nothing else was tried")) << why;
  EXPECT_FALSE(contains(why, "Set TILEFUSE_LIBCUDA to its full path")) << why;
  EXPECT_FALSE(contains(why, "/usr/local/cuda/lib64/libcuda.so.1")) << why;
}

TEST(CudaLoader, StubOverrideIsRefusedAndSaidSo) {
  const std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  std::string why;
  EXPECT_EQ(open_cuda_libraries(fake_env({{"TILEFUSE_LIBCUDA", stub}}), &why), nullptr);
  EXPECT_TRUE(contains(why, stub + " (a stub library, skipped)")) << why;
}

// dlopen(3) open(2)s the file for reading: on a FIFO with no writer it
// blocked forever. A FIFO, a directory or a device is refused by name.
TEST(CudaLoader, AnOverrideThatIsNoRegularFileIsRefusedNotOpened) {
  char tmpl[] = "/tmp/tilefuse-loader-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string fifo = dir + "/libcuda.so.1";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, dir, std::string("/dev/zero")}) {
    std::string why;
    EXPECT_EQ(open_cuda_libraries(fake_env({{"TILEFUSE_LIBCUDA", path}}), &why), nullptr);
    EXPECT_TRUE(contains(why, path + " (not a regular file)")) << why;
  }
  // The same FIFO found through CUDA_HOME is skipped too.
  ASSERT_EQ(::mkdir((dir + "/lib64").c_str(), 0700), 0);
  ASSERT_EQ(::mkfifo((dir + "/lib64/libcuda.so.1").c_str(), 0600), 0);
  std::string why;
  open_cuda_libraries(fake_env({{"CUDA_HOME", dir}}), &why);
  ::unlink((dir + "/lib64/libcuda.so.1").c_str());
  ::rmdir((dir + "/lib64").c_str());
  ::unlink(fifo.c_str());
  ::rmdir(dir.c_str());
}

// A bare soname that LD_LIBRARY_PATH resolves to a FIFO: dlopen would
// block in open(2) as well; it is skipped and named.
// (Where a libcuda is installed, a full-path candidate opens before the
// soname is tried: the test needs a machine without one.)
TEST(CudaLoader, ASonameFoundThroughLdLibraryPathAsAFifoIsRefusedNotOpened) {
  if (!libcuda_absent()) GTEST_SKIP() << "a CUDA driver library is installed";
  char tmpl[] = "/tmp/tilefuse-loader-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string fifo = dir + "/libcuda.so.1";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string why;
  // (An empty entry and a missing directory before it, as ld.so reads them.)
  EXPECT_EQ(open_cuda_libraries(
                fake_env({{"LD_LIBRARY_PATH", "/nonexistent-tilefuse-dir;:" + dir + ":/usr/lib"}}),
                &why),
            nullptr);
  EXPECT_TRUE(contains(why, "libcuda.so.1 (found through LD_LIBRARY_PATH at " + fifo +
                                ", not a regular file)"))
      << why;
  ::unlink(fifo.c_str());
  ::rmdir(dir.c_str());
}

TEST(CudaLoader, NonCudaLibraryNamesTheMissingSymbol) {
  const std::string libm = libm_path();
  std::string why;
  auto libs = open_cuda_libraries(
      fake_env({{"TILEFUSE_LIBCUDA", libm}, {"TILEFUSE_LIBNVRTC", libm}}), &why);
  EXPECT_EQ(libs, nullptr);
  EXPECT_TRUE(contains(why, "libcuda at " + libm)) << why;
  EXPECT_TRUE(contains(why, "lacks the symbol cuInit")) << why;
  // Without a driver, libnvrtc is not even opened (issue 14: no GPU
  // library loaded where no GPU is usable).
  EXPECT_FALSE(contains(why, "libnvrtc")) << why;
}

TEST(CudaLoader, ProcessWideLoadIsCleanWithOrWithoutCuda) {
  std::string why;
  const CudaLibraries* libs = load_cuda_libraries(&why);
  EXPECT_EQ(load_cuda_libraries(), libs);  // loaded once
  std::string avail_why;
  bool available = cuda_available(&avail_why);
  if (libs == nullptr) {
    EXPECT_FALSE(why.empty());
    EXPECT_FALSE(available);
    EXPECT_EQ(avail_why, why);
  } else {
    EXPECT_TRUE(why.empty()) << why;
    EXPECT_NE(libs->cuInit, nullptr);
    EXPECT_NE(libs->cuEventElapsedTime, nullptr);
    EXPECT_NE(libs->nvrtcDestroyProgram, nullptr);
    EXPECT_FALSE(libs->libcuda_path.empty());
    EXPECT_FALSE(libs->libnvrtc_path.empty());
  }
  EXPECT_EQ(available, avail_why.empty()) << avail_why;
  std::string again;
  EXPECT_EQ(cuda_available(&again), available);
  EXPECT_EQ(again, avail_why);
}

TEST(CudaLoader, UnavailableWithoutTheLibraries) {
  if (!libcuda_absent()) GTEST_SKIP() << "libcuda is installed on this machine";
  std::string why;
  EXPECT_EQ(open_cuda_libraries(process_env(), &why), nullptr);
  EXPECT_TRUE(contains(why, "Could not load the CUDA driver library")) << why;
  if (std::getenv("TILEFUSE_LIBCUDA") == nullptr) {
    std::string avail_why;
    EXPECT_FALSE(cuda_available(&avail_why));
    EXPECT_TRUE(contains(avail_why, "libcuda")) << avail_why;
  }
}

}  // namespace
}  // namespace tilefuse::cuda
