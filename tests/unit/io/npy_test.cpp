// .npy reading and writing: round trips of every dtype, header variants
// (numpy.lib.format: versions 1.0-3.0, key order, quoting, 0-dim and 1-tuple
// shapes, big-endian descrs) and malformed files, which must all be a
// UserError naming the path.
#include "io/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"

namespace tilefuse {
namespace {

namespace fs = std::filesystem;

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tilefuse_npy_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string write_bytes(const std::string& name, const std::string& bytes) const {
    const std::string p = path(name);
    std::ofstream(p, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }

  static std::string read_bytes(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // A version-1.0 file with the given header dict text and data bytes.
  static std::string npy_v1(const std::string& dict, const std::string& data) {
    std::string header = dict;
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(header.size() & 0xFF);
    out += static_cast<char>(header.size() >> 8);
    return out + header + data;
  }

  // Expects read_npy(p) to throw a UserError that names `p` and contains `what`.
  static void expect_read_error(const std::string& p, const std::string& what) {
    try {
      read_npy(p);
      ADD_FAILURE() << "no error reading " << p;
    } catch (const UserError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(p), std::string::npos) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << "want '" << what << "' in: " << msg;
    }
  }

  fs::path dir_;
};

template <typename T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

template <typename T>
std::string raw_big_endian(const std::vector<T>& v) {
  std::string s = raw(v);
  for (size_t i = 0; i < s.size(); i += sizeof(T))
    std::reverse(s.begin() + i, s.begin() + i + sizeof(T));
  return s;
}

// Nonzero values that vary per element and per dtype (splitmix64-driven).
Tensor random_tensor(DType dt, const Shape& shape, uint64_t seed) {
  Tensor t = Tensor::empty(dt, shape);
  uint64_t s = seed;
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    double v;
    if (dt == DType::Bool) {
      v = 1;  // all true: "never zeros"; the mix below adds falses
      if (i % 3 == 1) v = 0;
    } else if (is_integral(dt)) {
      v = static_cast<double>(static_cast<int64_t>(z % 200) - 100);
      if (v == 0) v = 7;
      if (dt == DType::U8) v = std::fabs(v) + 100;
      if (dt == DType::I64) v *= 1e12;
      if (dt == DType::I32) v *= 1e6;
    } else {
      v = (static_cast<double>(z >> 11) * 0x1p-53 * 2 - 1) * 3;
      if (round_to(dt, v) == 0) v = 0.5;
    }
    t.set_linear(i, v);
  }
  return t;
}

TEST_F(NpyTest, RoundTripEveryDType) {
#define TF_ALL_DTYPES(e, name, size, cat) DType::e,
  const DType all[] = {TILEFUSE_FOR_EACH_DTYPE(TF_ALL_DTYPES)};
#undef TF_ALL_DTYPES
  uint64_t seed = 1;
  for (DType dt : all) {
    for (const Shape& shape : {Shape{3, 5}, Shape{7}, Shape{2, 3, 4}, Shape{}}) {
      const Tensor t = random_tensor(dt, shape, seed++);
      const std::string p = path(std::string(dtype_name(dt)) + ".npy");
      write_npy(p, t);
      const Tensor r = read_npy(p);
      const bool widened = dt == DType::BF16 || dt == DType::F8E4M3 || dt == DType::F8E5M2;
      EXPECT_EQ(r.dtype(), widened ? DType::F32 : dt) << dtype_name(dt);
      EXPECT_EQ(r.shape(), shape) << dtype_name(dt);
      EXPECT_TRUE(r.is_contiguous());
      EXPECT_EQ(r.to_vector(), t.to_vector()) << dtype_name(dt) << shape_to_string(shape);
      if (!widened && t.numel() > 0) {
        EXPECT_EQ(std::memcmp(r.data_ptr(), t.data_ptr(), t.numel() * dtype_size(dt)), 0)
            << dtype_name(dt);
      }
      // The data starts at a multiple of 64 bytes, as NumPy writes it.
      const std::string bytes = read_bytes(p);
      EXPECT_EQ((bytes.size() - static_cast<size_t>(t.numel()) * dtype_size(r.dtype())) % 64, 0u);
    }
  }
}

TEST_F(NpyTest, HeaderMatchesNumPy) {
  Tensor t = Tensor::full(DType::F32, {2, 3}, 1.5);
  write_npy(path("a.npy"), t);
  const std::string bytes = read_bytes(path("a.npy"));
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_EQ(bytes.size(), 128u + 24u);
  EXPECT_EQ(bytes.substr(0, 10), std::string("\x93NUMPY\x01\x00\x76\x00", 10));  // len 118
  EXPECT_EQ(bytes.substr(10, dict.size()), dict);
  EXPECT_EQ(bytes[127], '\n');
  write_npy(path("b.npy"), Tensor::full(DType::I64, {5}, 1));
  EXPECT_NE(read_bytes(path("b.npy")).find("'shape': (5,), }"), std::string::npos);
  write_npy(path("c.npy"), Tensor::full(DType::Bool, {}, 1));
  EXPECT_NE(
      read_bytes(path("c.npy")).find("{'descr': '|b1', 'fortran_order': False, 'shape': (), }"),
      std::string::npos);
}

TEST_F(NpyTest, StridedViewsAreWrittenInCOrder) {
  Tensor t = Tensor::empty(DType::I32, {3, 4});
  for (int64_t i = 0; i < 12; ++i) t.set_linear(i, static_cast<double>(i + 1));
  const Tensor v = t.permute({1, 0}).slice(0, 1, 4, 2);  // [2, 3]: columns 1 and 3
  write_npy(path("v.npy"), v);
  const Tensor r = read_npy(path("v.npy"));
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.to_vector(), (std::vector<double>{2, 6, 10, 4, 8, 12}));
  const Tensor e = Tensor::full(DType::F16, {4}, 2).expand({3, 4});
  write_npy(path("e.npy"), e);
  EXPECT_EQ(read_npy(path("e.npy")).to_vector(), std::vector<double>(12, 2.0));
}

TEST_F(NpyTest, EmptyShapes) {
  for (const Shape& shape : {Shape{0}, Shape{2, 0, 3}, Shape{0, 0}}) {
    write_npy(path("z.npy"), Tensor::empty(DType::F64, shape));
    const Tensor r = read_npy(path("z.npy"));
    EXPECT_EQ(r.shape(), shape);
    EXPECT_EQ(r.numel(), 0);
  }
  // An empty array whose other dims multiply past int64 is still empty.
  const Tensor big = read_npy(write_bytes(
      "big0.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': "
                         "(4611686018427387904, 4, 0), }",
                         "")));
  EXPECT_EQ(big.shape(), (Shape{int64_t{1} << 62, 4, 0}));
  EXPECT_EQ(big.numel(), 0);
  // 0-dim holds one element.
  write_npy(path("s.npy"), Tensor::full(DType::F16, {}, -0.75));
  const Tensor s = read_npy(path("s.npy"));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.get({}), -0.75);
}

TEST_F(NpyTest, HeaderVariants) {
  const std::vector<float> f = {1.5f, -2.25f, 3.0f};
  // Keys in another order, double quotes, no trailing comma, extra spaces.
  Tensor a = read_npy(write_bytes(
      "a.npy", npy_v1("{\"shape\": (3,),   'fortran_order':False,\"descr\":'<f4'}", raw(f))));
  EXPECT_EQ(a.dtype(), DType::F32);
  EXPECT_EQ(a.to_vector(), (std::vector<double>{1.5, -2.25, 3.0}));
  // Python 2 long ints and a list shape.
  Tensor b = read_npy(write_bytes(
      "b.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': [3L], }", raw(f))));
  EXPECT_EQ(b.shape(), (Shape{3}));
  // Version 2.0 and 3.0: 4-byte header length.
  for (char major : {'\x02', '\x03'}) {
    std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 2), }";
    while ((12 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string file("\x93NUMPY", 6);
    file += major;
    file += '\0';
    const uint32_t n = static_cast<uint32_t>(header.size());
    file += std::string(reinterpret_cast<const char*>(&n), 4);
    file += header + raw(std::vector<int64_t>{-5, 1LL << 40});
    Tensor c = read_npy(write_bytes("c.npy", file));
    EXPECT_EQ(c.shape(), (Shape{1, 2}));
    EXPECT_EQ(c.to_vector(), (std::vector<double>{-5, 0x1p40}));
  }
  // Fortran order of a 1-D array is the same layout: accepted.
  Tensor d = read_npy(write_bytes(
      "d.npy", npy_v1("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 1), }", raw(f))));
  EXPECT_EQ(d.shape(), (Shape{3, 1}));
  // Bool bytes other than 0/1 are normalised; '|u1' and '|i1'.
  Tensor e = read_npy(
      write_bytes("e.npy", npy_v1("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                                  std::string("\x00\x01\x07", 3))));
  EXPECT_EQ(e.dtype(), DType::Bool);
  EXPECT_EQ(reinterpret_cast<const uint8_t*>(e.data_ptr())[2], 1);
  Tensor g = read_npy(write_bytes(
      "g.npy", npy_v1("{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }", "\xff\x05")));
  EXPECT_EQ(g.to_vector(), (std::vector<double>{-1, 5}));
  // Trailing bytes after the data are ignored, as np.load does.
  Tensor h = read_npy(write_bytes(
      "h.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", raw(f))));
  EXPECT_EQ(h.to_vector(), (std::vector<double>{1.5, -2.25}));
}

TEST_F(NpyTest, BigEndianIsConverted) {
  Tensor a = read_npy(
      write_bytes("a.npy", npy_v1("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
                                  raw_big_endian(std::vector<float>{1.5f, -1e-3f}))));
  EXPECT_EQ(a.dtype(), DType::F32);
  EXPECT_EQ(a.to_vector(), (std::vector<double>{1.5, static_cast<double>(-1e-3f)}));
  Tensor b = read_npy(
      write_bytes("b.npy", npy_v1("{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }",
                                  raw_big_endian(std::vector<int64_t>{-3, 1LL << 50}))));
  EXPECT_EQ(b.to_vector(), (std::vector<double>{-3, 0x1p50}));
  Tensor c = read_npy(
      write_bytes("c.npy", npy_v1("{'descr': '>f2', 'fortran_order': False, 'shape': (1,), }",
                                  std::string("\x3c\x01", 2))));  // 1 + 2^-10
  EXPECT_EQ(c.to_vector(), (std::vector<double>{1.0 + 0x1p-10}));
  Tensor d = read_npy(
      write_bytes("d.npy", npy_v1("{'descr': '>i4', 'fortran_order': False, 'shape': (), }",
                                  raw_big_endian(std::vector<int32_t>{-123456}))));
  EXPECT_EQ(d.get({}), -123456);
}

TEST_F(NpyTest, MalformedFilesAreUserErrors) {
  const std::string f4 = raw(std::vector<float>(6, 1.0f));
  expect_read_error(path("missing.npy"), "no such file");
  expect_read_error(dir_.string(), "directory");
  expect_read_error(write_bytes("empty.npy", ""), "too short");
  expect_read_error(
      write_bytes("magic.npy", std::string("\x93NUMPX\x01\x00\x10\x00", 10) + "{}            \n"),
      "bad magic");
  expect_read_error(write_bytes("version.npy", std::string("\x93NUMPY\x07\x00\x00\x00", 10)),
                    "version 7.0");
  expect_read_error(
      write_bytes("fortran.npy",
                  npy_v1("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", f4)),
      "Fortran");
  // Data truncated by one byte.
  const std::string good =
      npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f4);
  expect_read_error(write_bytes("trunc.npy", good.substr(0, good.size() - 1)), "truncated data");
  // Header truncated (the length field claims more than the file holds).
  expect_read_error(write_bytes("trunch.npy", good.substr(0, 40)), "truncated header");
  // A header claiming a huge shape: rejected from the file size, nothing allocated.
  expect_read_error(
      write_bytes("huge.npy",
                  npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, "
                         "1000000000), }",
                         f4)),
      "truncated data");
  expect_read_error(
      write_bytes("overflow.npy",
                  npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, "
                         "4294967296, 4294967296), }",
                         f4)),
      "too large");
  expect_read_error(
      write_bytes("neg.npy",
                  npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", f4)),
      "negative");
  expect_read_error(
      write_bytes("dtype.npy",
                  npy_v1("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", f4)),
      "unsupported dtype '<c8'");
  // A byte that is not printable text is escaped: the message stays whole.
  expect_read_error(write_bytes("nul.npy", npy_v1(std::string("{'descr': '<f4") + '\0' +
                                                      "', 'fortran_order': False, 'shape': (1,), }",
                                                  f4)),
                    "unsupported dtype '<f4\\x00' (supported: bool");
  expect_read_error(
      write_bytes("u2.npy",
                  npy_v1("{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", f4)),
      "unsupported dtype");
  expect_read_error(
      write_bytes("rec.npy",
                  npy_v1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", f4)),
      "structured");
  expect_read_error(write_bytes("nokey.npy", npy_v1("{'descr': '<f4', 'shape': (1,), }", f4)),
                    "fortran_order");
  expect_read_error(write_bytes("notdict.npy", npy_v1("[1, 2]", f4)), "not a dict");
  expect_read_error(
      write_bytes("syntax.npy",
                  npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1,", f4)),
      "malformed header");
  expect_read_error(
      write_bytes("name.npy",
                  npy_v1("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", f4)),
      "malformed header");
  expect_read_error(
      write_bytes("shapetype.npy",
                  npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': ('a',), }", f4)),
      "non-integer");
  expect_read_error(
      write_bytes("bigint.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': "
                                       "(99999999999999999999999,), }",
                                       f4)),
      "too large");
  // More dims than NumPy allows (64): an error of its own, not the shape quoted
  // whole (100,000 dims made a 300 KB message).
  std::string dims;
  for (int i = 0; i < 100000; ++i) dims += "1, ";
  // (Version 2.0: the header is longer than 1.0's 16-bit length can say.)
  const std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }\n";
  const uint32_t header_len = static_cast<uint32_t>(header.size());
  const std::string many =
      write_bytes("many_dims.npy", std::string("\x93NUMPY\x02\x00", 8) +
                                       std::string(reinterpret_cast<const char*>(&header_len), 4) +
                                       header + f4);
  expect_read_error(many, "'shape' has 100000 dims; a NumPy array has at most 64");
  try {
    read_npy(many);
  } catch (const UserError& e) {
    EXPECT_LT(std::string(e.what()).size(), 400u) << e.what();
  }
  // 64 dims are read.
  dims.clear();
  for (int i = 0; i < 64; ++i) dims += "1, ";
  EXPECT_EQ(read_npy(write_bytes("64_dims.npy",
                                 npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                                            dims + "), }",
                                        raw(std::vector<float>(1, 2.0f)))))
                .dim(),
            64);
}

// Random corruption of a valid file: every outcome is a tensor or a UserError.
TEST_F(NpyTest, CorruptedFilesNeverCrash) {
  const std::string good = npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                  raw(std::vector<float>(6, 1.0f)));
  uint64_t s = 99;
  auto next = [&] {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  const std::string p = path("fuzz.npy");
  for (int iter = 0; iter < 3000; ++iter) {
    std::string bytes = good;
    const int edits = 1 + static_cast<int>(next() % 4);
    for (int k = 0; k < edits; ++k) {
      const size_t at = next() % 90;  // the prefix and header
      bytes[at] = static_cast<char>(next() & 0xFF);
    }
    if (next() % 4 == 0) bytes.resize(next() % bytes.size());
    write_bytes("fuzz.npy", bytes);
    try {
      const Tensor t = read_npy(p);
      EXPECT_LE(t.numel() * dtype_size(t.dtype()), static_cast<int64_t>(bytes.size()));
    } catch (const UserError&) {
    }
  }
}

TEST_F(NpyTest, WriteIsAtomicAndReportsErrors) {
  const std::string p = path("out.npy");
  write_npy(p, Tensor::full(DType::F32, {4}, 1));
  write_npy(p, Tensor::full(DType::F32, {2}, 2));  // replaces the old file
  EXPECT_EQ(read_npy(p).to_vector(), (std::vector<double>{2, 2}));
  // No temporary files are left behind.
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1);
  try {
    write_npy(path("no/such/dir/x.npy"), Tensor::full(DType::F32, {1}, 1));
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no/such/dir/x.npy"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tilefuse
