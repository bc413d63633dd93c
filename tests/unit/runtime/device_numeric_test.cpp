// The device numerics header (src/runtime/device/tf_numeric.cuh) and the
// embedding of the device headers (runtime/cuda/device_headers.h).
//
// - DeviceNumericHeaders.*: the embedded table matches the files on disk.
// - DeviceNumericCompile.*: NVRTC compiles every cast pair, operator and
//   intrinsic for sm_80 and sm_90a (wherever libnvrtc loads; no GPU needed).
// - DeviceNumericGpu.*: the device results against the host rules of
//   core/dtype.h and the CPU executor, bit for bit (NaN: both NaN), for every
//   pair of dtypes over exhaustive 8- and 16-bit inputs and large f32 / f64 /
//   integer sets; twice: with the PTX cvt fast paths and with the integer
//   code (TF_NUMERIC_SOFTWARE_CVT). Skipped without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/cuda.h"
#include "core/dtype.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/device_headers.h"
#include "runtime/cuda/nvrtc.h"

namespace tilefuse::cuda {
namespace {

namespace fs = std::filesystem;

// Kernel names unique per process and call: on the H200 machine a repeated
// compile of the same kernel came back without a ptxas report (nvrtc.h).
std::string unique_name(const std::string& base) {
  static int counter = 0;
  return base + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---- the embedded headers --------------------------------------------------

TEST(DeviceNumericHeaders, EveryCuhFileIsEmbeddedSortedAndFindable) {
  const fs::path dir = fs::path(TILEFUSE_SOURCE_DIR) / "src" / "runtime" / "device";
  std::set<std::string> on_disk;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".cuh") on_disk.insert(entry.path().filename().string());
  ASSERT_TRUE(on_disk.count("tf_numeric.cuh"));
  const std::vector<DeviceHeader>& headers = device_headers();
  std::set<std::string> embedded;
  for (std::size_t i = 0; i < headers.size(); ++i) {
    embedded.insert(std::string(headers[i].name));
    if (i > 0) {
      EXPECT_LT(headers[i - 1].name, headers[i].name);
    }
    // Byte for byte the file (the build re-embeds a header when it changes).
    EXPECT_EQ(headers[i].source, read_file(dir / std::string(headers[i].name))) << headers[i].name;
    const DeviceHeader* found = find_device_header(headers[i].name);
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found, &headers[i]);
  }
  EXPECT_EQ(embedded, on_disk);
  EXPECT_EQ(find_device_header("no_such_header.cuh"), nullptr);
  EXPECT_EQ(find_device_header(""), nullptr);
  EXPECT_EQ(find_device_header("tf_numeric"), nullptr);
}

// The raw string literals of a generated table, per header: the bytes they
// spell (adjacent literals concatenated) under the name pushed after them.
std::vector<std::pair<std::string, std::string>> parse_generated(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string current;
  std::size_t at = 0;
  const std::string push = "headers.push_back({\"";
  while (true) {
    const std::size_t lit = text.find("R\"", at);
    const std::size_t name = text.find(push, at);
    if (lit == std::string::npos && name == std::string::npos) break;
    if (lit != std::string::npos && (name == std::string::npos || lit < name)) {
      const std::size_t open = text.find('(', lit);
      const std::string delim = text.substr(lit + 2, open - lit - 2);
      const std::string close = ")" + delim + "\"";
      const std::size_t end = text.find(close, open + 1);
      if (end == std::string::npos) break;
      current += text.substr(open + 1, end - open - 1);
      at = end + close.size();
    } else {
      const std::size_t begin = name + push.size();
      const std::size_t end = text.find('"', begin);
      out.emplace_back(text.substr(begin, end - begin), current);
      current.clear();
      at = end;
    }
  }
  return out;
}

TEST(DeviceNumericHeaders, EmbedScriptKeepsEveryByteOfEveryHeader) {
  if (std::system("cmake --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no cmake on PATH";
  const fs::path dir =
      fs::temp_directory_path() / ("tilefuse-embed-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "in");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / "in" / name, std::ios::binary) << text;
  };
  // The script's first delimiters appear in the text; CMake-special
  // characters; UTF-8; a file of several chunks; an empty file; a non-.cuh.
  const std::string tricky =
      "a )tfembed0\" b )tfembed1\" c )\" d\n${NOT_A_VAR} @AT@ ; [[x]] \\n \\\\ \"q\" ?\?= \n"
      "// \xC3\xA9\xE2\x89\xA5 \xF0\x9F\x99\x82\n#define X(a) #a\n";
  std::string big;
  for (int i = 0; big.size() < 30000; ++i)
    big += "// line " + std::to_string(i) + " \xE2\x80\x94 " + std::string(i % 97, 'x') + ";\n";
  big += "no newline at the end )";
  write("b_tricky.cuh", tricky);
  write("a_big.cuh", big);
  write("c_empty.cuh", "");
  write("d_ignored.txt", "not a header");
  const fs::path out = dir / "out.cpp";
  const std::string cmd = "cmake -DHEADER_DIR=" + (dir / "in").string() +
                          " -DOUTPUT=" + out.string() + " -P " + TILEFUSE_SOURCE_DIR +
                          "/cmake/embed_device_headers.cmake";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string text = read_file(out);
  const auto parsed = parse_generated(text);
  ASSERT_EQ(parsed.size(), 3u) << text.substr(0, 2000);
  EXPECT_EQ(parsed[0].first, "a_big.cuh");
  EXPECT_EQ(parsed[0].second, big);
  EXPECT_EQ(parsed[1].first, "b_tricky.cuh");
  EXPECT_EQ(parsed[1].second, tricky);
  EXPECT_EQ(parsed[2].first, "c_empty.cuh");
  EXPECT_EQ(parsed[2].second, "");
  EXPECT_NE(text.find("R\"tfembed2("), std::string::npos);  // the first safe delimiter
  // The big file is split into literals of at most 8000 bytes.
  std::size_t literals = 0;
  for (std::size_t p = text.find("R\"tfembed0("); p != std::string::npos;
       p = text.find("R\"tfembed0(", p + 1))
    ++literals;
  EXPECT_GE(literals, 4u);
  // Re-running with the same inputs leaves the file alone (no rebuild).
  const auto before = fs::last_write_time(out);
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(fs::last_write_time(out), before);
  fs::remove_all(dir);
}

// ---- device types and host formats ------------------------------------------

// Every dtype with its device type name, in core/dtype.h's order.
struct TypeInfo {
  DType dt;
  const char* device;  // C++ type in the kernel
  const char* tag;     // kernel name part
};
const std::vector<TypeInfo>& all_types() {
  static const std::vector<TypeInfo> types = {
      {DType::Bool, "bool", "bool"},
      {DType::U8, "tf::u8", "u8"},
      {DType::I8, "tf::i8", "i8"},
      {DType::I32, "tf::i32", "i32"},
      {DType::I64, "tf::i64", "i64"},
      {DType::F8E4M3, "tf::f8e4m3", "f8e4m3"},
      {DType::F8E5M2, "tf::f8e5m2", "f8e5m2"},
      {DType::F16, "tf::f16", "f16"},
      {DType::BF16, "tf::bf16", "bf16"},
      {DType::F32, "float", "f32"},
      {DType::F64, "double", "f64"},
  };
  return types;
}

std::string cast_kernel_name(const TypeInfo& to, const TypeInfo& from) {
  return std::string("cast_") + to.tag + "_from_" + from.tag;
}

// Kernels over every cast pair: out[i] = tf::cast<To>(in[i]).
std::string cast_kernels_source(bool software_cvt) {
  std::string src = software_cvt ? "#define TF_NUMERIC_SOFTWARE_CVT\n" : "";
  src += R"(#include "tf_numeric.cuh"
#define TF_TEST_CAST(NAME, TO, FROM)                                                   \
  extern "C" __global__ void NAME(const FROM* __restrict__ in, TO* __restrict__ out,  \
                                  long long n) {                                       \
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;                    \
    if (i < n) out[i] = tf::cast<TO>(in[i]);                                           \
  }
)";
  for (const TypeInfo& to : all_types())
    for (const TypeInfo& from : all_types())
      src += std::string("TF_TEST_CAST(") + cast_kernel_name(to, from) + ", " + to.device + ", " +
             from.device + ")\n";
  // Pairs: out[i] = tf::cast_pack2<T>(in[2i], in[2i + 1]) (the staged GEMM
  // epilogue's conversion, EpiloguePlan::pair_cast).
  src += R"(
#define TF_TEST_PACK2(NAME, T)                                                           \
  extern "C" __global__ void NAME(const float* __restrict__ in, unsigned* __restrict__ out, \
                                  long long n) {                                          \
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;                       \
    if (i < n) out[i] = tf::cast_pack2<T>(in[2 * i], in[2 * i + 1]);                      \
  }
TF_TEST_PACK2(cast_pack2_f16, tf::f16)
TF_TEST_PACK2(cast_pack2_bf16, tf::bf16)
)";
  return src;
}

// f16 / bf16 operators, floor division, min / max and the intrinsics.
const char* kOpsKernels = R"(#include "tf_numeric.cuh"
#define TF_TEST_HALF_OPS(NAME, T)                                                     \
  extern "C" __global__ void NAME(const T* a, const T* b, T* out, bool* cmp,         \
                                  long long n) {                                     \
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;                  \
    if (i >= n) return;                                                              \
    T x = a[i], y = b[i];                                                            \
    out[5 * i + 0] = x + y;                                                          \
    out[5 * i + 1] = x - y;                                                          \
    out[5 * i + 2] = x * y;                                                          \
    out[5 * i + 3] = x / y;                                                          \
    out[5 * i + 4] = -x;                                                             \
    cmp[6 * i + 0] = x == y;                                                         \
    cmp[6 * i + 1] = x != y;                                                         \
    cmp[6 * i + 2] = x < y;                                                          \
    cmp[6 * i + 3] = x <= y;                                                         \
    cmp[6 * i + 4] = x > y;                                                          \
    cmp[6 * i + 5] = x >= y;                                                         \
  }
TF_TEST_HALF_OPS(half_ops_f16, tf::f16)
TF_TEST_HALF_OPS(half_ops_bf16, tf::bf16)
TF_TEST_HALF_OPS(half_ops_f8e4m3, tf::f8e4m3)
TF_TEST_HALF_OPS(half_ops_f8e5m2, tf::f8e5m2)

#define TF_TEST_BINARY(NAME, T)                                                       \
  extern "C" __global__ void NAME(const T* a, const T* b, T* out, long long n) {     \
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;                  \
    if (i >= n) return;                                                              \
    out[4 * i + 0] = tf::floordiv(a[i], b[i]);                                       \
    out[4 * i + 1] = tf::floormod(a[i], b[i]);                                       \
    out[4 * i + 2] = tf::min(a[i], b[i]);                                            \
    out[4 * i + 3] = tf::max(a[i], b[i]);                                            \
  }
TF_TEST_BINARY(int_binary_i32, tf::i32)
TF_TEST_BINARY(int_binary_i64, tf::i64)
TF_TEST_BINARY(int_binary_i8, tf::i8)
TF_TEST_BINARY(int_binary_u8, tf::u8)

#define TF_TEST_MINMAX(NAME, T)                                                       \
  extern "C" __global__ void NAME(const T* a, const T* b, T* out, long long n) {     \
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;                  \
    if (i >= n) return;                                                              \
    out[3 * i + 0] = tf::min(a[i], b[i]);                                            \
    out[3 * i + 1] = tf::max(a[i], b[i]);                                            \
    out[3 * i + 2] = tf::floormod(a[i], b[i]);                                       \
  }
TF_TEST_MINMAX(float_minmax_f32, float)
TF_TEST_MINMAX(float_minmax_f64, double)
TF_TEST_MINMAX(float_minmax_f16, tf::f16)
TF_TEST_MINMAX(float_minmax_bf16, tf::bf16)
TF_TEST_MINMAX(float_minmax_f8e4m3, tf::f8e4m3)
TF_TEST_MINMAX(float_minmax_f8e5m2, tf::f8e5m2)

// Every intrinsic of TILEFUSE_FOR_EACH_TIR_INTRINSIC, in that order.
#define TF_TEST_MATH(NAME, T)                                                         \
  extern "C" __global__ void NAME(const T* a, const T* b, const T* c, T* out,        \
                                  long long n) {                                     \
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;                  \
    if (i >= n) return;                                                              \
    T x = a[i], y = b[i], z = c[i];                                                  \
    T* o = out + 18 * i;                                                             \
    o[0] = tf::neg(x);                                                               \
    o[1] = tf::abs(x);                                                               \
    o[2] = tf::exp(x);                                                               \
    o[3] = tf::exp2(x);                                                              \
    o[4] = tf::log(x);                                                               \
    o[5] = tf::log2(x);                                                              \
    o[6] = tf::sqrt(x);                                                              \
    o[7] = tf::rsqrt(x);                                                             \
    o[8] = tf::tanh(x);                                                              \
    o[9] = tf::erf(x);                                                               \
    o[10] = tf::sigmoid(x);                                                          \
    o[11] = tf::sin(x);                                                              \
    o[12] = tf::cos(x);                                                              \
    o[13] = tf::floor(x);                                                            \
    o[14] = tf::ceil(x);                                                             \
    o[15] = tf::hypot(x, y);                                                         \
    o[16] = tf::pow(x, y);                                                           \
    o[17] = tf::fma(x, y, z);                                                        \
  }
TF_TEST_MATH(math_f32, float)
TF_TEST_MATH(math_f64, double)
TF_TEST_MATH(math_f16, tf::f16)
TF_TEST_MATH(math_bf16, tf::bf16)
TF_TEST_MATH(math_f8e4m3, tf::f8e4m3)
TF_TEST_MATH(math_f8e5m2, tf::f8e5m2)

#define TF_TEST_INT_NEG_ABS(NAME, T)                                                  \
  extern "C" __global__ void NAME(const T* a, T* out, long long n) {                 \
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;                  \
    if (i >= n) return;                                                              \
    out[2 * i + 0] = tf::neg(a[i]);                                                  \
    out[2 * i + 1] = tf::abs(a[i]);                                                  \
  }
TF_TEST_INT_NEG_ABS(int_neg_abs_i8, tf::i8)
TF_TEST_INT_NEG_ABS(int_neg_abs_u8, tf::u8)
TF_TEST_INT_NEG_ABS(int_neg_abs_i32, tf::i32)
TF_TEST_INT_NEG_ABS(int_neg_abs_i64, tf::i64)

// The storage types are what the emitter relies on.
static_assert(sizeof(tf::f16) == 2 && alignof(tf::f16) == 2, "f16");
static_assert(sizeof(tf::bf16) == 2 && sizeof(tf::f8e4m3) == 1 && sizeof(tf::f8e5m2) == 1, "");
static_assert(__is_trivially_copyable(tf::f16) && __is_trivially_copyable(tf::bf16) &&
              __is_trivially_copyable(tf::f8e4m3) && __is_trivially_copyable(tf::f8e5m2), "");
)";

CompileOptions options_for(const std::string& arch) {
  CompileOptions o;
  o.arch = arch;
  o.extra = {"-std=c++17"};
  return o;
}

// ---- compile-only ------------------------------------------------------------

// One kernel touching every cast pair (also i16 / u16 / u32 / u64 / int
// types beyond the dtypes), every operator and every intrinsic.
std::string everything_source(const std::string& name, bool software_cvt) {
  const std::vector<std::string> types = {
      "bool",    "tf::i8",     "tf::u8",     "tf::i16", "tf::u16",  "tf::i32", "tf::u32", "tf::i64",
      "tf::u64", "tf::f8e4m3", "tf::f8e5m2", "tf::f16", "tf::bf16", "float",   "double"};
  std::string src = software_cvt ? "#define TF_NUMERIC_SOFTWARE_CVT\n" : "";
  src += "#include \"tf_numeric.cuh\"\n";
  src += R"(
template <class To, class From>
__device__ void one_cast(const unsigned char* in, unsigned char* out, int i) {
  reinterpret_cast<To*>(out)[i] = tf::cast<To>(reinterpret_cast<const From*>(in)[i]);
}
template <class T>
__device__ void float_math(const T* in, T* out, int i) {
  T x = in[i], y = in[i + 1], z = in[i + 2];
  T* o = out + 32 * i;
  o[0] = tf::neg(x); o[1] = tf::abs(x); o[2] = tf::exp(x); o[3] = tf::exp2(x);
  o[4] = tf::log(x); o[5] = tf::log2(x); o[6] = tf::sqrt(x); o[7] = tf::rsqrt(x);
  o[8] = tf::tanh(x); o[9] = tf::erf(x); o[10] = tf::sigmoid(x); o[11] = tf::sin(x);
  o[12] = tf::cos(x); o[13] = tf::floor(x); o[14] = tf::ceil(x); o[15] = tf::hypot(x, y);
  o[16] = tf::pow(x, y); o[17] = tf::fma(x, y, z); o[18] = tf::min(x, y); o[19] = tf::max(x, y);
  o[20] = tf::floormod(x, y);
}
template <class T>
__device__ void half_ops(const T* in, T* out, bool* cmp, int i) {
  T x = in[i], y = in[i + 1];
  T* o = out + 8 * i;
  o[0] = x + y; o[1] = x - y; o[2] = x * y; o[3] = x / y; o[4] = -x;
  T acc = x; acc += y; acc -= y; acc *= y; acc /= y; o[5] = acc;
  bool* c = cmp + 6 * i;
  c[0] = x == y; c[1] = x != y; c[2] = x < y; c[3] = x <= y; c[4] = x > y; c[5] = x >= y;
}
template <class T>
__device__ void int_ops(const T* in, T* out, int i) {
  T x = in[i], y = in[i + 1];
  T* o = out + 8 * i;
  o[0] = tf::floordiv(x, y); o[1] = tf::floormod(x, y); o[2] = tf::min(x, y);
  o[3] = tf::max(x, y); o[4] = tf::neg(x); o[5] = tf::abs(x);
}
)";
  src += "extern \"C\" __global__ void " + name +
         "(const unsigned char* in, unsigned char* out, bool* cmp) {\n"
         "  int i = threadIdx.x;\n";
  for (const std::string& to : types)
    for (const std::string& from : types)
      src += "  one_cast<" + to + ", " + from + ">(in, out, i);\n";
  for (const char* t : {"float", "double", "tf::f16", "tf::bf16", "tf::f8e4m3", "tf::f8e5m2"})
    src += std::string("  float_math<") + t + ">(reinterpret_cast<const " + t +
           "*>(in), reinterpret_cast<" + t + "*>(out), i);\n";
  for (const char* t : {"tf::f16", "tf::bf16", "tf::f8e4m3", "tf::f8e5m2"})
    src += std::string("  half_ops<") + t + ">(reinterpret_cast<const " + t +
           "*>(in), reinterpret_cast<" + t + "*>(out), cmp, i);\n";
  for (const char* t : {"tf::i8", "tf::u8", "tf::i16", "tf::i32", "tf::i64"})
    src += std::string("  int_ops<") + t + ">(reinterpret_cast<const " + t +
           "*>(in), reinterpret_cast<" + t + "*>(out), i);\n";
  src += "  out[0] = tf::min(in[0] != 0, in[1] != 0) + tf::max(in[0] != 0, in[1] != 0);\n";
  src +=
      "  const float* f = reinterpret_cast<const float*>(in);\n"
      "  reinterpret_cast<unsigned*>(out)[i] = tf::cast_pack2<tf::f16>(f[i], f[i + 1]) ^\n"
      "                                        tf::cast_pack2<tf::bf16>(f[i], f[i + 1]);\n}\n";
  return src;
}

TEST(DeviceNumericCompile, EveryCastOpAndIntrinsicCompilesForSm80AndSm90a) {
  SKIP_WITHOUT_NVRTC();
  for (const char* arch : {"sm_80", "sm_90a"}) {
    for (bool software : {false, true}) {
      // The integer paths are the same code for every arch: sm_80 is enough.
      if (software && std::string(arch) != "sm_80") continue;
      SCOPED_TRACE(std::string(arch) + (software ? " software cvt" : " ptx cvt"));
      const std::string name = unique_name("numeric_everything");
      CompiledKernel k = compile_cuda(everything_source(name, software), name, options_for(arch));
      EXPECT_FALSE(k.cubin.empty());
    }
  }
}

TEST(DeviceNumericCompile, TestKernelsCompileForSm80AndSm90a) {
  SKIP_WITHOUT_NVRTC();
  for (const char* arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    EXPECT_FALSE(
        compile_cuda(cast_kernels_source(false), unique_name("numeric_casts"), options_for(arch))
            .cubin.empty());
    EXPECT_FALSE(
        compile_cuda(kOpsKernels, unique_name("numeric_ops"), options_for(arch)).cubin.empty());
  }
}

TEST(DeviceNumericCompile, WithoutDeviceHeadersTheIncludeIsNotFound) {
  SKIP_WITHOUT_NVRTC();
  CompileOptions o = options_for("sm_80");
  o.device_headers = false;
  const std::string name = unique_name("numeric_no_headers");
  const std::string src = "#include \"tf_numeric.cuh\"\nextern \"C\" __global__ void " + name +
                          "(tf::f16* p) { p[0] = tf::cast<tf::f16>(1.0f); }\n";
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved_env = old ? old : "";
  const fs::path cache =
      fs::temp_directory_path() / ("tilefuse-numeric-" + std::to_string(getpid()));
  ::setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  std::string message;
  try {
    compile_cuda(src, name, o);
  } catch (const std::exception& e) {
    message = e.what();
  }
  if (old) {
    ::setenv("XDG_CACHE_HOME", saved_env.c_str(), 1);
  } else {
    ::unsetenv("XDG_CACHE_HOME");
  }
  fs::remove_all(cache);
  EXPECT_NE(message.find("tf_numeric.cuh"), std::string::npos) << message;
  // With them (the default) it compiles.
  EXPECT_FALSE(compile_cuda(src, name, options_for("sm_80")).cubin.empty());
}

// ---- host reference ------------------------------------------------------

// An element read exactly: integers as int64, floats as double.
struct HostValue {
  bool is_int = false;
  int64_t i = 0;
  double f = 0;
};

HostValue load_value(DType dt, const uint8_t* p) {
  HostValue v;
  switch (dt) {
    case DType::Bool:
      v.is_int = true;
      v.i = p[0] != 0;
      return v;
    case DType::U8:
      v.is_int = true;
      v.i = p[0];
      return v;
    case DType::I8:
      v.is_int = true;
      v.i = static_cast<int8_t>(p[0]);
      return v;
    case DType::I32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      v.is_int = true;
      v.i = x;
      return v;
    }
    case DType::I64:
      v.is_int = true;
      std::memcpy(&v.i, p, 8);
      return v;
    default:
      v.f = load_element(dt, p);
      return v;
  }
}

// The element of dtype `to` that casting `v` gives (tir/ir.h "Rounding",
// core/dtype.h), written to q.
void store_reference(DType to, const HostValue& v, uint8_t* q) {
  if (to == DType::Bool) {
    q[0] = v.is_int ? v.i != 0 : v.f != 0;  // NaN != 0
    return;
  }
  if (!v.is_int) {
    store_element(to, q, v.f);
    return;
  }
  switch (to) {
    case DType::U8:
      q[0] = static_cast<uint8_t>(v.i);
      return;
    case DType::I8:
      q[0] = static_cast<uint8_t>(static_cast<int8_t>(v.i));
      return;
    case DType::I32: {
      const int32_t x = static_cast<int32_t>(v.i);
      std::memcpy(q, &x, 4);
      return;
    }
    case DType::I64:
      std::memcpy(q, &v.i, 8);
      return;
    case DType::F32: {
      const float x = static_cast<float>(v.i);  // one rounding
      std::memcpy(q, &x, 4);
      return;
    }
    case DType::F64: {
      const double x = static_cast<double>(v.i);
      std::memcpy(q, &x, 8);
      return;
    }
    default:  // f16, bf16, f8: through f32 (core/dtype.h's rule, PyTorch's)
      store_element(to, q, static_cast<double>(static_cast<float>(v.i)));
      return;
  }
}

bool is_nan_element(DType dt, const uint8_t* p) {
  return is_floating(dt) && std::isnan(load_element(dt, p));
}

std::string hex_bytes(const uint8_t* p, int n) {
  std::string s = "0x";
  static const char* digits = "0123456789abcdef";
  for (int k = n - 1; k >= 0; --k) {
    s += digits[p[k] >> 4];
    s += digits[p[k] & 15];
  }
  return s;
}

// Equal bytes, or both NaN.
bool same_element(DType dt, const uint8_t* a, const uint8_t* b) {
  const int size = dtype_size(dt);
  if (std::memcmp(a, b, size) == 0) return true;
  return is_nan_element(dt, a) && is_nan_element(dt, b);
}

// ---- inputs ------------------------------------------------------------------

template <class T>
void append(std::vector<uint8_t>& bytes, T v) {
  const std::size_t at = bytes.size();
  bytes.resize(at + sizeof v);
  std::memcpy(bytes.data() + at, &v, sizeof v);
}

float f32_of(uint32_t u) {
  return std::bit_cast<float>(u);
}

// f32 inputs: edge cases, every f16 / bf16 / f8 value and the f32 values at
// and next to each midpoint between neighbours (the ties), plus random bits.
std::vector<float> f32_inputs() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          f32_of(0x7FC00000u),
                          f32_of(0xFFC00000u),
                          f32_of(0x7F800001u),
                          f32_of(0x7FBFFFFFu),
                          f32_of(0xFFFFFFFFu),
                          f32_of(1u),
                          f32_of(0x807FFFFFu),
                          f32_of(0x00800000u),
                          f32_of(0x7F7FFFFFu),
                          65504.0f,
                          65519.99f,
                          65520.0f,
                          65536.0f,
                          448.0f,
                          464.0f,
                          std::nextafter(464.0f, 1e9f),
                          std::nextafter(464.0f, 0.0f),
                          480.0f,
                          57344.0f,
                          61440.0f,
                          std::nextafter(61440.0f, 0.0f),
                          0x1p-9f,
                          0x1p-10f,
                          0x3p-11f,
                          0x1p-16f,
                          0x1p-17f,
                          0x1p-24f,
                          0x1p-25f,
                          0x3p-26f,
                          0x1p-133f,
                          0x1p-134f,
                          0.5f,
                          -0.5f,
                          0.99999994f,
                          -0.99999994f,
                          1.5f,
                          -1.5f,
                          255.5f,
                          256.0f,
                          300.0f,
                          -129.0f,
                          2147483520.0f,
                          2147483648.0f,
                          -2147483648.0f,
                          4294967296.0f,
                          0x1p62f,
                          0x1p63f,
                          -0x1p63f,
                          0x1p64f,
                          0x1.8p64f,
                          0x1.000002p63f,
                          0x1.000002p64f,
                          -0x1.000002p64f,
                          1e30f,
                          -1e30f};
  auto add_neighbours = [&](double mid) {
    const float f = static_cast<float>(mid);  // exact for these midpoints
    v.push_back(f);
    v.push_back(std::nextafter(f, 1e38f));
    v.push_back(std::nextafter(f, -1e38f));
    v.push_back(-f);
  };
  for (uint32_t h = 0; h < 0x7C00; ++h) {  // f16 finite: value and midpoint to the next
    const double a = f16_bits_to_f32(static_cast<uint16_t>(h));
    const double b = f16_bits_to_f32(static_cast<uint16_t>(h + 1));
    v.push_back(static_cast<float>(a));
    add_neighbours((a + b) / 2);
  }
  for (uint32_t h = 0; h < 0x7F80; ++h) {  // bf16
    const double a = bf16_bits_to_f32(static_cast<uint16_t>(h));
    const double b = bf16_bits_to_f32(static_cast<uint16_t>(h + 1));
    add_neighbours((a + b) / 2);
  }
  for (uint32_t b8 = 0; b8 < 0x7F; ++b8) {  // f8 formats (e4m3: 0x7E + 1 is NaN: use 480)
    const double a = f8e4m3_bits_to_f32(static_cast<uint8_t>(b8));
    const double b = b8 + 1 == 0x7F ? 480.0 : f8e4m3_bits_to_f32(static_cast<uint8_t>(b8 + 1));
    add_neighbours((a + b) / 2);
    if (b8 < 0x7C) {
      const double c = f8e5m2_bits_to_f32(static_cast<uint8_t>(b8));
      const double d = f8e5m2_bits_to_f32(static_cast<uint8_t>(b8 + 1));
      add_neighbours((c + d) / 2);
    }
  }
  std::mt19937_64 rng(20261130);
  for (int k = 0; k < (1 << 20); ++k) v.push_back(f32_of(static_cast<uint32_t>(rng())));
  std::uniform_real_distribution<float> small(-600.0f, 600.0f);
  for (int k = 0; k < (1 << 16); ++k) v.push_back(small(rng));
  return v;
}

// f64 inputs: the double-rounding traps (a narrow format's midpoint plus or
// minus a tiny amount, which an f32 step would round onto the midpoint),
// values near every f32 midpoint, integer boundaries and random values.
std::vector<double> f64_inputs() {
  std::vector<double> v = {0.0,
                           -0.0,
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(),
                           -std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::denorm_min(),
                           -std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::min(),
                           0x1p-149,
                           0x1p-150,
                           0x1.0000000000001p-150,
                           0x1p-1074,
                           65504.0,
                           65519.999999999,
                           65520.0,
                           464.0,
                           464.00000001,
                           463.99999999,
                           480.0,
                           61440.0,
                           61439.9999999,
                           3.4028235677973366e38,
                           3.4028235677973362e38,
                           0x1.FFFFFFp127,
                           0x1.FFp127,
                           0x1p128,
                           0.5,
                           -0.5,
                           0.9999999999999999,
                           -0.9999999999999999,
                           2147483647.9,
                           2147483648.0,
                           -2147483648.5,
                           -2147483649.0,
                           4294967295.0,
                           4294967296.0,
                           9007199254740993.0,
                           0x1p63,
                           -0x1p63,
                           0x1.0000000000001p63,
                           0x1p64,
                           0x1.0000000000001p64,
                           -0x1.0000000000001p64,
                           0x1p65,
                           0x1.8p100,
                           1e300,
                           -1e300,
                           255.999,
                           256.0,
                           -128.9,
                           -129.0};
  auto traps = [&](double a, double b) {
    const double mid = (a + b) / 2;
    v.push_back(mid);
    v.push_back(-mid);
    for (double rel : {0x1p-30, 0x1p-40, 0x1p-50}) {
      const double d = std::fabs(mid) * rel;
      v.push_back(mid + d);
      v.push_back(mid - d);
      v.push_back(-(mid + d));
    }
    v.push_back(std::nextafter(mid, 1e308));
    v.push_back(std::nextafter(mid, -1e308));
  };
  for (uint32_t h = 0; h < 0x7C00; ++h)
    traps(f16_bits_to_f32(static_cast<uint16_t>(h)), f16_bits_to_f32(static_cast<uint16_t>(h + 1)));
  for (uint32_t h = 0; h < 0x7F80; h += 3)
    traps(bf16_bits_to_f32(static_cast<uint16_t>(h)),
          bf16_bits_to_f32(static_cast<uint16_t>(h + 1)));
  for (uint32_t b8 = 0; b8 < 0x7E; ++b8) {
    traps(f8e4m3_bits_to_f32(static_cast<uint8_t>(b8)),
          f8e4m3_bits_to_f32(static_cast<uint8_t>(b8 + 1)));
    traps(f8e5m2_bits_to_f32(static_cast<uint8_t>(b8)),
          f8e5m2_bits_to_f32(static_cast<uint8_t>(b8 + 1)));
  }
  traps(448.0, 480.0);
  traps(57344.0, 65536.0);
  traps(65504.0, 65536.0);
  traps(0x1.FEp127, 0x1p128);
  std::mt19937_64 rng(7);
  for (int k = 0; k < 100000; ++k) {  // f32 midpoints
    const float f = f32_of(static_cast<uint32_t>(rng()) & 0x7F7FFFFFu);
    traps(f, std::nextafter(f, 1e38f));
  }
  for (int k = 0; k < (1 << 19); ++k) v.push_back(std::bit_cast<double>(rng()));
  std::uniform_int_distribution<int> exps(-160, 140);
  for (int k = 0; k < (1 << 19); ++k) {
    const double m = std::ldexp(static_cast<double>(rng() >> 11), -53);  // [0, 1)
    v.push_back(std::ldexp(k % 2 ? -m : m, exps(rng)));
  }
  return v;
}

std::vector<int64_t> i64_inputs() {
  std::vector<int64_t> v = {0,
                            1,
                            -1,
                            2,
                            -2,
                            127,
                            128,
                            -128,
                            -129,
                            255,
                            256,
                            2048,
                            2049,
                            2051,
                            65504,
                            65519,
                            65520,
                            -65520,
                            464,
                            465,
                            57344,
                            61440,
                            61439,
                            (1 << 24) + 1,
                            (1 << 24) + 3,
                            INT32_MAX,
                            INT32_MIN,
                            int64_t{INT32_MAX} + 1,
                            int64_t{INT32_MIN} - 1,
                            (int64_t{1} << 53) + 1,
                            -(int64_t{1} << 53) - 1,
                            INT64_MAX,
                            INT64_MIN,
                            INT64_MAX - 1,
                            INT64_MIN + 1};
  for (int k = 1; k < 63; ++k) {
    const int64_t p = int64_t{1} << k;
    for (int64_t x : {p, p - 1, p + 1, -p, -p + 1, -p - 1}) v.push_back(x);
    // ties for bf16 (8 significant bits), f32 (24), f16 (11): 2^k + half an ulp +-1
    for (int bits : {8, 11, 24}) {
      if (k - bits < 0) continue;
      const int64_t half = int64_t{1} << (k - bits);
      for (int64_t x : {p + half, p + half + 1, p + half - 1, p + 3 * half, p + 3 * half + 1})
        v.push_back(x), v.push_back(-x);
    }
  }
  std::mt19937_64 rng(99);
  for (int k = 0; k < 200000; ++k) {
    const int shift = static_cast<int>(rng() % 64);
    v.push_back(static_cast<int64_t>(rng() >> shift));
    v.push_back(-static_cast<int64_t>(rng() >> shift));
  }
  return v;
}

// The input bytes of dtype `dt` for the cast tests.
std::vector<uint8_t> inputs_of(DType dt) {
  std::vector<uint8_t> b;
  switch (dt) {
    case DType::Bool:
      b = {0, 1};
      break;
    case DType::U8:
    case DType::I8:
    case DType::F8E4M3:
    case DType::F8E5M2:
      for (int x = 0; x < 256; ++x) b.push_back(static_cast<uint8_t>(x));
      break;
    case DType::F16:
    case DType::BF16:
      for (uint32_t x = 0; x < 65536; ++x) append(b, static_cast<uint16_t>(x));
      break;
    case DType::I32: {
      std::vector<int64_t> v = i64_inputs();
      for (int64_t x : v) append(b, static_cast<int32_t>(x));
      break;
    }
    case DType::I64:
      for (int64_t x : i64_inputs()) append(b, x);
      break;
    case DType::F32:
      for (float x : f32_inputs()) append(b, x);
      break;
    case DType::F64:
      for (double x : f64_inputs()) append(b, x);
      break;
  }
  return b;
}

// ---- running kernels -------------------------------------------------------

struct GpuModules {
  std::unique_ptr<Device> device;
  std::unique_ptr<Module> casts_ptx, casts_software, ops;
};

// Compiled once per process for the device's arch.
GpuModules& gpu() {
  static GpuModules m = [] {
    GpuModules g;
    g.device = std::make_unique<Device>();
    const CompileOptions o = options_for(g.device->arch());
    g.casts_ptx = std::make_unique<Module>(
        *g.device, compile_cuda(cast_kernels_source(false), "numeric_casts_ptx", o).cubin);
    g.casts_software = std::make_unique<Module>(
        *g.device, compile_cuda(cast_kernels_source(true), "numeric_casts_soft", o).cubin);
    g.ops = std::make_unique<Module>(*g.device, compile_cuda(kOpsKernels, "numeric_ops", o).cubin);
    return g;
  }();
  return m;
}

// Launches `kernel`(inputs..., outputs..., n) with one thread per element.
void launch(const Module& mod, const std::string& kernel, std::vector<DeviceBuffer*> buffers,
            int64_t n) {
  std::vector<void*> args;
  for (DeviceBuffer* b : buffers) args.push_back(&b->arg());
  long long count = n;
  args.push_back(&count);
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  mod.function(kernel).launch({blocks}, {256}, 0, args.data());
  gpu().device->synchronize();
}

DeviceBuffer upload(const std::vector<uint8_t>& bytes) {
  DeviceBuffer b(*gpu().device, std::max<std::size_t>(bytes.size(), 1));
  b.upload(bytes);
  return b;
}

// Every cast pair over the inputs of its source dtype, against the host.
void check_all_casts(const Module& mod) {
  for (const TypeInfo& from : all_types()) {
    const std::vector<uint8_t> in = inputs_of(from.dt);
    const int fs = dtype_size(from.dt);
    const int64_t n = static_cast<int64_t>(in.size()) / fs;
    DeviceBuffer din = upload(in);
    for (const TypeInfo& to : all_types()) {
      const int ts = dtype_size(to.dt);
      DeviceBuffer dout(*gpu().device, n * ts);
      dout.memset(0xA5);
      launch(mod, cast_kernel_name(to, from), {&din, &dout}, n);
      const std::vector<uint8_t> got = dout.download<uint8_t>(n * ts);
      int failures = 0;
      uint8_t want[8];
      for (int64_t k = 0; k < n && failures < 10; ++k) {
        const HostValue v = load_value(from.dt, in.data() + k * fs);
        store_reference(to.dt, v, want);
        if (!same_element(to.dt, got.data() + k * ts, want)) {
          ++failures;
          ADD_FAILURE() << "cast " << from.tag << " -> " << to.tag << " of "
                        << hex_bytes(in.data() + k * fs, fs) << " ("
                        << (v.is_int ? std::to_string(v.i) : std::to_string(v.f)) << "): device "
                        << hex_bytes(got.data() + k * ts, ts) << ", host " << hex_bytes(want, ts);
        }
      }
    }
  }
}

TEST(DeviceNumericGpu, EveryCastPairMatchesTheHostWithPtxConversions) {
  SKIP_WITHOUT_GPU();
  check_all_casts(*gpu().casts_ptx);
}

TEST(DeviceNumericGpu, EveryCastPairMatchesTheHostWithSoftwareConversions) {
  SKIP_WITHOUT_GPU();
  check_all_casts(*gpu().casts_software);
}

// tf::cast_pack2<f16 / bf16>(lo, hi) against the host's f32_to_f16_bits /
// f32_to_bf16_bits (core/dtype.h) of each half, bit for bit, NaN included
// (f16 0x7E00 | the sign, bf16 0x7FC0): every f32 input of f32_inputs() (the
// ties of every f16 / bf16 neighbour pair, subnormals, +-0, +-inf, NaN
// payloads of both signs, values rounding to inf, random bits) as the low
// element with its mirror as the high one, and the other way round.
void check_cast_pack2(const Module& mod) {
  const std::vector<float> v = f32_inputs();
  const int64_t n = static_cast<int64_t>(v.size());
  std::vector<float> pairs;
  for (int64_t k = 0; k < n; ++k) pairs.push_back(v[k]), pairs.push_back(v[n - 1 - k]);
  for (int64_t k = 0; k < n; ++k) pairs.push_back(v[n - 1 - k]), pairs.push_back(v[k]);
  const int64_t count = 2 * n;
  std::vector<uint8_t> bytes(pairs.size() * 4);
  std::memcpy(bytes.data(), pairs.data(), bytes.size());
  DeviceBuffer din = upload(bytes);
  for (const bool bf16 : {false, true}) {
    DeviceBuffer dout(*gpu().device, count * 4);
    dout.memset(0xA5);
    launch(mod, bf16 ? "cast_pack2_bf16" : "cast_pack2_f16", {&din, &dout}, count);
    const std::vector<uint32_t> got = dout.download<uint32_t>(count);
    int failures = 0;
    for (int64_t k = 0; k < count && failures < 10; ++k) {
      const float lo = pairs[2 * k], hi = pairs[2 * k + 1];
      auto enc = [&](float f) -> uint32_t {
        return bf16 ? f32_to_bf16_bits(f) : f32_to_f16_bits(f);
      };
      const uint32_t want = enc(lo) | (enc(hi) << 16);
      if (got[k] != want) {
        ++failures;
        ADD_FAILURE() << "cast_pack2<" << (bf16 ? "bf16" : "f16") << ">(0x" << std::hex
                      << std::bit_cast<uint32_t>(lo) << ", 0x" << std::bit_cast<uint32_t>(hi)
                      << "): device 0x" << got[k] << ", host 0x" << want << std::dec;
      }
    }
  }
}

TEST(DeviceNumericGpu, CastPack2MatchesTheHostWithPtxConversions) {
  SKIP_WITHOUT_GPU();
  check_cast_pack2(*gpu().casts_ptx);
}

TEST(DeviceNumericGpu, CastPack2MatchesTheHostWithSoftwareConversions) {
  SKIP_WITHOUT_GPU();
  check_cast_pack2(*gpu().casts_software);
}

// The reference rules of the CPU executor (eval_expr.cpp).
int64_t host_floordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t host_floormod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

template <class T>
void check_int_binary(const std::string& kernel) {
  std::vector<T> a, b;
  const std::vector<int64_t> special = {0,
                                        1,
                                        -1,
                                        2,
                                        -2,
                                        3,
                                        -3,
                                        7,
                                        -7,
                                        static_cast<int64_t>(std::numeric_limits<T>::min()),
                                        static_cast<int64_t>(std::numeric_limits<T>::max()),
                                        static_cast<int64_t>(std::numeric_limits<T>::min()) + 1};
  for (int64_t x : special)
    for (int64_t y : special) a.push_back(static_cast<T>(x)), b.push_back(static_cast<T>(y));
  std::mt19937_64 rng(5);
  for (int k = 0; k < 200000; ++k) {
    const int sa = static_cast<int>(rng() % 64), sb = static_cast<int>(rng() % 64);
    a.push_back(static_cast<T>(static_cast<int64_t>(rng()) >> sa));
    b.push_back(static_cast<T>(static_cast<int64_t>(rng()) >> sb));
  }
  const int64_t n = static_cast<int64_t>(a.size());
  std::vector<uint8_t> ab(a.size() * sizeof(T)), bb(b.size() * sizeof(T));
  std::memcpy(ab.data(), a.data(), ab.size());
  std::memcpy(bb.data(), b.data(), bb.size());
  DeviceBuffer da = upload(ab), db = upload(bb), dout(*gpu().device, 4 * n * sizeof(T));
  launch(*gpu().ops, kernel, {&da, &db, &dout}, n);
  const std::vector<T> got = dout.download<T>(4 * n);
  int failures = 0;
  for (int64_t k = 0; k < n && failures < 10; ++k) {
    const int64_t x = a[k], y = b[k];
    const T want[4] = {static_cast<T>(host_floordiv(x, y)), static_cast<T>(host_floormod(x, y)),
                       static_cast<T>(x < y ? x : y), static_cast<T>(x > y ? x : y)};
    for (int j = 0; j < 4; ++j) {
      if (got[4 * k + j] != want[j]) {
        ++failures;
        ADD_FAILURE() << kernel << " op " << j << " (floordiv, floormod, min, max) of " << x << ", "
                      << y << ": device " << static_cast<int64_t>(got[4 * k + j]) << ", host "
                      << static_cast<int64_t>(want[j]);
      }
    }
  }
}

TEST(DeviceNumericGpu, FloorDivModMinMaxOnIntegersMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  check_int_binary<int32_t>("int_binary_i32");
  check_int_binary<int64_t>("int_binary_i64");
  check_int_binary<int8_t>("int_binary_i8");
  check_int_binary<uint8_t>("int_binary_u8");
}

TEST(DeviceNumericGpu, FloorDivModKnownValues) {
  SKIP_WITHOUT_GPU();
  // Python: -7 // 2 == -4, -7 % 2 == 1, 7 % -2 == -1; x // 0 == 0 here.
  const std::vector<int32_t> a = {-7, 7, -7, 7, 5, INT32_MIN, INT32_MIN, 0};
  const std::vector<int32_t> b = {2, -2, -2, 2, 0, -1, 2, -5};
  const std::vector<int32_t> q = {-4, -4, 3, 3, 0, INT32_MIN, -1073741824, 0};
  const std::vector<int32_t> r = {1, -1, -1, 1, 0, 0, 0, 0};
  std::vector<uint8_t> ab(a.size() * 4), bb(b.size() * 4);
  std::memcpy(ab.data(), a.data(), ab.size());
  std::memcpy(bb.data(), b.data(), bb.size());
  const int64_t n = static_cast<int64_t>(a.size());
  DeviceBuffer da = upload(ab), db = upload(bb), dout(*gpu().device, 4 * n * 4);
  launch(*gpu().ops, "int_binary_i32", {&da, &db, &dout}, n);
  const std::vector<int32_t> got = dout.download<int32_t>(4 * n);
  for (int64_t k = 0; k < n; ++k) {
    EXPECT_EQ(got[4 * k], q[k]) << a[k] << " // " << b[k];
    EXPECT_EQ(got[4 * k + 1], r[k]) << a[k] << " % " << b[k];
  }
}

template <class T>
void check_int_neg_abs(const std::string& kernel) {
  std::vector<T> a;
  for (int64_t x : i64_inputs()) a.push_back(static_cast<T>(x));
  std::vector<uint8_t> ab(a.size() * sizeof(T));
  std::memcpy(ab.data(), a.data(), ab.size());
  const int64_t n = static_cast<int64_t>(a.size());
  DeviceBuffer da = upload(ab), dout(*gpu().device, 2 * n * sizeof(T));
  launch(*gpu().ops, kernel, {&da, &dout}, n);
  const std::vector<T> got = dout.download<T>(2 * n);
  int failures = 0;
  for (int64_t k = 0; k < n && failures < 10; ++k) {
    const int64_t x = a[k];
    const uint64_t ux = static_cast<uint64_t>(x);
    const T neg = static_cast<T>(static_cast<int64_t>(0 - ux));
    const T abs = x < 0 ? neg : static_cast<T>(x);
    if (got[2 * k] != neg || got[2 * k + 1] != abs) {
      ++failures;
      ADD_FAILURE() << kernel << " of " << x << ": neg " << static_cast<int64_t>(got[2 * k])
                    << " (host " << static_cast<int64_t>(neg) << "), abs "
                    << static_cast<int64_t>(got[2 * k + 1]) << " (host "
                    << static_cast<int64_t>(abs) << ")";
    }
  }
}

TEST(DeviceNumericGpu, IntegerNegAbsWrap) {
  SKIP_WITHOUT_GPU();
  check_int_neg_abs<int8_t>("int_neg_abs_i8");
  check_int_neg_abs<uint8_t>("int_neg_abs_u8");
  check_int_neg_abs<int32_t>("int_neg_abs_i32");
  check_int_neg_abs<int64_t>("int_neg_abs_i64");
}

// Pairs of `dt` values: specials crossed with specials, then random bit
// patterns (16-bit types) or random values.
std::vector<double> float_pair_specials() {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -3.0, 1e-3, -7.25, inf, -inf, nan, 65504.0, 1e-7};
}

// Encodings of a narrow float dtype (1 or 2 bytes) as integers.
uint32_t read_bits(DType dt, const uint8_t* p) {
  return dtype_size(dt) == 1 ? p[0] : static_cast<uint32_t>(p[0] | (p[1] << 8));
}
void write_bits(DType dt, uint8_t* p, uint32_t bits) {
  p[0] = static_cast<uint8_t>(bits);
  if (dtype_size(dt) == 2) p[1] = static_cast<uint8_t>(bits >> 8);
}
// The encoding ordered as the values are (+-0 both 0), for distances.
int ordered_bits(DType dt, uint32_t bits) {
  const uint32_t sign = dtype_size(dt) == 1 ? 0x80u : 0x8000u;
  const int mag = static_cast<int>(bits & (sign - 1));
  return bits & sign ? -mag : mag;
}

// Host f16 / bf16 / f8 arithmetic as the CPU executor does it: in double,
// rounded once to the type. 8-bit types: every pair; 16-bit: random pairs.
void check_half_ops(DType dt, const std::string& kernel) {
  const int es = dtype_size(dt);
  std::vector<uint8_t> ab, bb;
  uint8_t tmp[2];
  auto push = [&](uint32_t x, uint32_t y) {
    write_bits(dt, tmp, x);
    ab.insert(ab.end(), tmp, tmp + es);
    write_bits(dt, tmp, y);
    bb.insert(bb.end(), tmp, tmp + es);
  };
  for (double x : float_pair_specials())
    for (double y : float_pair_specials()) {
      uint8_t hx[2], hy[2];
      store_element(dt, hx, x);
      store_element(dt, hy, y);
      push(read_bits(dt, hx), read_bits(dt, hy));
    }
  if (es == 1) {
    for (uint32_t x = 0; x < 256; ++x)
      for (uint32_t y = 0; y < 256; ++y) push(x, y);
  } else {
    std::mt19937_64 rng(17);
    for (int k = 0; k < (1 << 20); ++k) {
      const uint64_t r = rng();
      // Every other pair: b close to a in magnitude (cancellation, ties).
      push(static_cast<uint16_t>(r),
           k % 2 ? static_cast<uint16_t>(r >> 16)
                 : static_cast<uint16_t>((r & 0xFFFF) + ((r >> 32) % 64) - 32));
    }
  }
  const int64_t n = static_cast<int64_t>(ab.size()) / es;
  DeviceBuffer da = upload(ab), db = upload(bb), dout(*gpu().device, 5 * n * es),
               dcmp(*gpu().device, 6 * n);
  launch(*gpu().ops, kernel, {&da, &db, &dout, &dcmp}, n);
  const std::vector<uint8_t> got = dout.download<uint8_t>(5 * n * es);
  const std::vector<uint8_t> cmp = dcmp.download<uint8_t>(6 * n);
  int failures = 0;
  for (int64_t k = 0; k < n && failures < 10; ++k) {
    const double x = load_element(dt, ab.data() + k * es), y = load_element(dt, bb.data() + k * es);
    const double exact[5] = {x + y, x - y, x * y, x / y, -x};
    for (int j = 0; j < 5; ++j) {
      uint8_t want[2];
      store_element(dt, want, exact[j]);
      const uint8_t* g = got.data() + (5 * k + j) * es;
      if (!same_element(dt, g, want)) {
        ++failures;
        ADD_FAILURE() << kernel << " op "
                      << "+-*/n"[j] << " of " << x << ", " << y << ": device " << hex_bytes(g, es)
                      << ", host " << hex_bytes(want, es);
      }
    }
    const bool want_cmp[6] = {x == y, x != y, x<y, x <= y, x> y, x >= y};
    for (int j = 0; j < 6; ++j) {
      if ((cmp[6 * k + j] != 0) != want_cmp[j]) {
        ++failures;
        ADD_FAILURE() << kernel << " comparison " << j << " (== != < <= > >=) of " << x << ", " << y
                      << ": device " << int(cmp[6 * k + j]);
      }
    }
  }
}

TEST(DeviceNumericGpu, HalfArithmeticRoundsOnceLikeTheCpu) {
  SKIP_WITHOUT_GPU();
  check_half_ops(DType::F16, "half_ops_f16");
  check_half_ops(DType::BF16, "half_ops_bf16");
  check_half_ops(DType::F8E4M3, "half_ops_f8e4m3");
  check_half_ops(DType::F8E5M2, "half_ops_f8e5m2");
}

// NaN-propagating min / max (core/dtype.h: -0 < +0) and floor modulo on
// floats (eval_expr.cpp).
template <class T>
T host_nan_min(T a, T b) {
  return float_minimum(a, b);
}
template <class T>
T host_nan_max(T a, T b) {
  return float_maximum(a, b);
}
template <class T>
T host_float_mod(T a, T b) {
  T r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

void check_float_minmax(DType dt, const std::string& kernel) {
  const int size = dtype_size(dt);
  std::vector<uint8_t> ab, bb;
  uint8_t tmp[8];
  std::vector<double> values = float_pair_specials();
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-100.0, 100.0);
  for (int k = 0; k < 40; ++k) values.push_back(u(rng));
  for (double x : values)
    for (double y : values) {
      store_element(dt, tmp, x);
      ab.insert(ab.end(), tmp, tmp + size);
      store_element(dt, tmp, y);
      bb.insert(bb.end(), tmp, tmp + size);
    }
  const int64_t n = static_cast<int64_t>(ab.size()) / size;
  DeviceBuffer da = upload(ab), db = upload(bb), dout(*gpu().device, 3 * n * size);
  launch(*gpu().ops, kernel, {&da, &db, &dout}, n);
  const std::vector<uint8_t> got = dout.download<uint8_t>(3 * n * size);
  int failures = 0;
  for (int64_t k = 0; k < n && failures < 10; ++k) {
    const double x = load_element(dt, ab.data() + k * size);
    const double y = load_element(dt, bb.data() + k * size);
    double want[3];
    if (dt == DType::F32) {
      const float fx = static_cast<float>(x), fy = static_cast<float>(y);
      want[0] = host_nan_min(fx, fy);
      want[1] = host_nan_max(fx, fy);
      want[2] = host_float_mod(fx, fy);
    } else {
      want[0] = host_nan_min(x, y);
      want[1] = host_nan_max(x, y);
      want[2] = host_float_mod(x, y);
    }
    for (int j = 0; j < 3; ++j) {
      uint8_t w[8];
      store_element(dt, w, want[j]);
      const uint8_t* g = got.data() + (3 * k + j) * size;
      // min / max return one operand: also the sign of a zero must match.
      if (!same_element(dt, g, w)) {
        ++failures;
        ADD_FAILURE() << kernel << " op " << j << " (min, max, floormod) of " << x << ", " << y
                      << ": device " << hex_bytes(g, size) << ", host " << hex_bytes(w, size);
      }
    }
  }
}

TEST(DeviceNumericGpu, FloatMinMaxPropagateNaNAndFloorModFollowsTheDivisor) {
  SKIP_WITHOUT_GPU();
  check_float_minmax(DType::F32, "float_minmax_f32");
  check_float_minmax(DType::F64, "float_minmax_f64");
  check_float_minmax(DType::F16, "float_minmax_f16");
  check_float_minmax(DType::BF16, "float_minmax_bf16");
  check_float_minmax(DType::F8E4M3, "float_minmax_f8e4m3");
  check_float_minmax(DType::F8E5M2, "float_minmax_f8e5m2");
}

// Distance in units in the last place between two finite values of T.
template <class T, class I>
int64_t ulp_distance(T a, T b) {
  auto ordered = [](T v) {
    I i;
    std::memcpy(&i, &v, sizeof v);
    return i < 0 ? std::numeric_limits<I>::min() - i : i;
  };
  const uint64_t x = static_cast<uint64_t>(static_cast<int64_t>(ordered(a)));
  const uint64_t y = static_cast<uint64_t>(static_cast<int64_t>(ordered(b)));
  const uint64_t d = std::min(x - y, y - x);  // modular: the shorter way round
  return d > uint64_t{1} << 62 ? int64_t{1} << 62 : static_cast<int64_t>(d);
}

// The intrinsics on f32 / f64: exact where the operation is correctly rounded
// (neg, abs, sqrt, rsqrt as 1 / sqrt, floor, ceil, fma), otherwise within the
// CUDA math library's documented error bounds (CUDA C++ Programming Guide,
// "Mathematical Functions": at most 4 ulp for these) of the host's value; NaN
// and infinity where the host gives them.
template <class T, class I>
void check_math(const std::string& kernel) {
  std::vector<T> a, b, c;
  const T inf = std::numeric_limits<T>::infinity();
  const std::vector<T> specials = {0, -0.0, 1, -1, 0.5, 2, 10, -10, 100, inf, -inf, 1e-30, 3};
  for (T x : specials)
    for (T y : specials) a.push_back(x), b.push_back(y), c.push_back(T(0.25));
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<T> wide(-20, 20), pos(0.001, 8), expo(-4, 4);
  for (int k = 0; k < 20000; ++k) {
    a.push_back(k % 2 ? wide(rng) : pos(rng));
    b.push_back(k % 3 ? expo(rng) : wide(rng));
    c.push_back(wide(rng));
  }
  const int64_t n = static_cast<int64_t>(a.size());
  auto bytes = [](const std::vector<T>& v) {
    std::vector<uint8_t> out(v.size() * sizeof(T));
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  };
  DeviceBuffer da = upload(bytes(a)), db = upload(bytes(b)), dc = upload(bytes(c)),
               dout(*gpu().device, 18 * n * sizeof(T));
  launch(*gpu().ops, kernel, {&da, &db, &dc, &dout}, n);
  const std::vector<T> got = dout.download<T>(18 * n);
  static const char* names[18] = {"neg",  "abs",   "exp",  "exp2",  "log",     "log2",
                                  "sqrt", "rsqrt", "tanh", "erf",   "sigmoid", "sin",
                                  "cos",  "floor", "ceil", "hypot", "pow",     "fma"};
  static const bool exact[18] = {true,  true,  false, false, false, false, true,  true,  false,
                                 false, false, false, false, true,  true,  false, false, true};
  int failures = 0;
  for (int64_t k = 0; k < n && failures < 20; ++k) {
    const T x = a[k], y = b[k], z = c[k];
    const T want[18] = {-x,
                        std::fabs(x),
                        std::exp(x),
                        std::exp2(x),
                        std::log(x),
                        std::log2(x),
                        std::sqrt(x),
                        T(1) / std::sqrt(x),
                        std::tanh(x),
                        std::erf(x),
                        T(1) / (T(1) + std::exp(-x)),
                        std::sin(x),
                        std::cos(x),
                        std::floor(x),
                        std::ceil(x),
                        std::hypot(x, y),
                        std::pow(x, y),
                        std::fma(x, y, z)};
    for (int j = 0; j < 18; ++j) {
      const T g = got[18 * k + j], w = want[j];
      bool ok;
      if (std::isnan(w) || std::isnan(g)) {
        ok = std::isnan(w) && std::isnan(g);
      } else if (exact[j] || std::isinf(w) || std::isinf(g)) {
        ok = std::memcmp(&g, &w, sizeof g) == 0 || (g == w && g != 0);
        if (!exact[j] && !ok) ok = g == w;
      } else {
        // sigmoid goes through exp: its error adds one rounding.
        const int64_t tolerance = j == 10 || j == 16 ? 8 : 4;
        ok = ulp_distance<T, I>(g, w) <= tolerance ||
             std::fabs(g - w) <= std::numeric_limits<T>::min();
      }
      if (!ok) {
        ++failures;
        ADD_FAILURE() << kernel << " " << names[j] << "(" << x << ", " << y << ", " << z
                      << "): device " << g << ", host " << w;
      }
    }
  }
}

TEST(DeviceNumericGpu, MathIntrinsicsOnF32AndF64) {
  SKIP_WITHOUT_GPU();
  check_math<float, int32_t>("math_f32");
  check_math<double, int64_t>("math_f64");
}

// f16 / bf16 / f8 intrinsics: the f32 result rounded once; the host computes
// in double and rounds once, so the two agree to within one unit of the type
// (exactly for the exact operations). 8-bit types: every x.
void check_half_math(DType dt, const std::string& kernel) {
  const int es = dtype_size(dt);
  std::vector<uint8_t> ab, bb, cb;
  uint8_t tmp[2];
  std::mt19937_64 rng(23);
  const int count = es == 1 ? 256 * 64 : 1 << 18;
  for (int k = 0; k < count; ++k) {
    const uint64_t r = rng();
    write_bits(dt, tmp, es == 1 ? static_cast<uint32_t>(k % 256) : static_cast<uint16_t>(r));
    ab.insert(ab.end(), tmp, tmp + es);
    write_bits(dt, tmp, static_cast<uint16_t>(r >> 16));
    bb.insert(bb.end(), tmp, tmp + es);
    write_bits(dt, tmp, static_cast<uint16_t>(r >> 32));
    cb.insert(cb.end(), tmp, tmp + es);
  }
  const int64_t n = count;
  DeviceBuffer da = upload(ab), db = upload(bb), dc = upload(cb), dout(*gpu().device, 18 * n * es);
  launch(*gpu().ops, kernel, {&da, &db, &dc, &dout}, n);
  const std::vector<uint8_t> got = dout.download<uint8_t>(18 * n * es);
  static const bool exact[18] = {true,  true,  false, false, false, false, true,  false, false,
                                 false, false, false, false, true,  true,  false, false, false};
  int failures = 0;
  for (int64_t k = 0; k < n && failures < 20; ++k) {
    const double x = load_element(dt, ab.data() + k * es), y = load_element(dt, bb.data() + k * es),
                 z = load_element(dt, cb.data() + k * es);
    const double want[18] = {-x,
                             std::fabs(x),
                             std::exp(x),
                             std::exp2(x),
                             std::log(x),
                             std::log2(x),
                             std::sqrt(x),
                             1 / std::sqrt(x),
                             std::tanh(x),
                             std::erf(x),
                             1 / (1 + std::exp(-x)),
                             std::sin(x),
                             std::cos(x),
                             std::floor(x),
                             std::ceil(x),
                             std::hypot(x, y),
                             std::pow(x, y),
                             std::fma(x, y, z)};
    for (int j = 0; j < 18; ++j) {
      uint8_t w[2];
      store_element(dt, w, want[j]);
      const uint8_t* gp = got.data() + (18 * k + j) * es;
      const uint32_t gb = read_bits(dt, gp), wb = read_bits(dt, w);
      const double g = load_element(dt, gp), wv = load_element(dt, w);
      bool ok;
      if (std::isnan(g) || std::isnan(wv)) {
        ok = std::isnan(g) && std::isnan(wv);
      } else if (exact[j]) {
        ok = gb == wb;
      } else {
        ok = std::abs(ordered_bits(dt, gb) - ordered_bits(dt, wb)) <= 1;
      }
      if (!ok) {
        ++failures;
        ADD_FAILURE() << kernel << " intrinsic " << j << " of " << x << ", " << y << ", " << z
                      << ": device " << g << " (" << hex_bytes(gp, es) << "), host " << wv;
      }
    }
  }
}

TEST(DeviceNumericGpu, MathIntrinsicsOnF16Bf16AndF8RoundOnce) {
  SKIP_WITHOUT_GPU();
  check_half_math(DType::F16, "math_f16");
  check_half_math(DType::BF16, "math_bf16");
  check_half_math(DType::F8E4M3, "math_f8e4m3");
  check_half_math(DType::F8E5M2, "math_f8e5m2");
}

}  // namespace
}  // namespace tilefuse::cuda
