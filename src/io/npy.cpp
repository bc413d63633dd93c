// NumPy .npy reader and writer.
//
// Format (numpy/lib/format.py, "NEP 1 — A Simple File Format for NumPy
// Arrays", and the numpy.lib.format docs):
//   "\x93NUMPY" major minor
//   header length: uint16 LE (version 1.0) or uint32 LE (2.0 and 3.0)
//   header: a Python dict literal with the keys 'descr' (a dtype string such
//           as '<f4'), 'fortran_order' (bool) and 'shape' (a tuple of ints),
//           padded with spaces and ended by '\n' so that the data starts at a
//           multiple of 64 bytes; latin-1 in 1.0/2.0, utf-8 in 3.0
//   data: numel * itemsize raw bytes in C (or Fortran) order.
//
// Every malformed file is a UserError that names the path and the problem.
// The header length and the shape are checked against the file size before
// anything is allocated, so a lying header cannot ask for a huge buffer.
#include "io/npy.h"

#include "core/text.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/memory.h"

namespace tilefuse {

static_assert(std::endian::native == std::endian::little,
              "npy.cpp assumes a little-endian host (the data is copied as is)");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kHeaderAlign = 64;

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw UserError("cannot read .npy file '" + path + "': " + problem);
}

// --- The header: a Python literal ------------------------------------------
//
// The subset NumPy writes (and a little more, so that hand-written or
// Python 2 headers load): dicts, tuples and lists, quoted strings, integers
// (an 'L' suffix allowed), True/False/None. Anything else is a parse error.

struct PyValue {
  enum class Kind { None, Bool, Int, Str, Tuple, List, Dict } kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  std::string s;
  std::vector<PyValue> items;  // Tuple, List; Dict: keys and values alternating
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  PyValue parse_document() {
    PyValue v = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) error("unexpected text after the header dict");
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    fail(path_, "malformed header (" + what + " at offset " + std::to_string(pos_) + ")");
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool eat(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  PyValue parse_value(int depth) {
    if (depth > 16) error("nesting too deep");
    skip_space();
    if (pos_ >= text_.size()) error("unexpected end");
    const char c = text_[pos_];
    if (c == '{') return parse_dict(depth);
    if (c == '(') return parse_sequence(depth, ')', PyValue::Kind::Tuple);
    if (c == '[') return parse_sequence(depth, ']', PyValue::Kind::List);
    if (c == '\'' || c == '"') return parse_string();
    if (c == '-' || c == '+' || (c >= '0' && c <= '9')) return parse_int();
    return parse_word();
  }

  PyValue parse_dict(int depth) {
    PyValue v;
    v.kind = PyValue::Kind::Dict;
    ++pos_;  // '{'
    while (!eat('}')) {
      PyValue key = parse_value(depth + 1);
      if (!eat(':')) error("expected ':'");
      PyValue value = parse_value(depth + 1);
      v.items.push_back(std::move(key));
      v.items.push_back(std::move(value));
      if (!eat(',')) {
        if (!eat('}')) error("expected ',' or '}'");
        break;
      }
    }
    return v;
  }

  PyValue parse_sequence(int depth, char close, PyValue::Kind kind) {
    PyValue v;
    v.kind = kind;
    ++pos_;  // '(' or '['
    bool saw_comma = false;
    while (!eat(close)) {
      v.items.push_back(parse_value(depth + 1));
      saw_comma = eat(',');
      if (!saw_comma) {
        if (!eat(close)) error(std::string("expected ',' or '") + close + "'");
        break;
      }
    }
    // `(5)` is a parenthesised int in Python, not a tuple.
    if (kind == PyValue::Kind::Tuple && v.items.size() == 1 && !saw_comma) return v.items[0];
    return v;
  }

  PyValue parse_string() {
    const char quote = text_[pos_++];
    PyValue v;
    v.kind = PyValue::Kind::Str;
    while (true) {
      if (pos_ >= text_.size()) error("unterminated string");
      const char c = text_[pos_++];
      if (c == quote) break;
      if (c == '\\') {
        if (pos_ >= text_.size()) error("unterminated string");
        v.s += text_[pos_++];
        continue;
      }
      v.s += c;
    }
    return v;
  }

  PyValue parse_int() {
    PyValue v;
    v.kind = PyValue::Kind::Int;
    bool negative = false;
    if (text_[pos_] == '-' || text_[pos_] == '+') negative = text_[pos_++] == '-';
    const size_t start = pos_;
    uint64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const uint64_t digit = static_cast<uint64_t>(text_[pos_] - '0');
      if (value > (static_cast<uint64_t>(INT64_MAX) - digit) / 10) error("integer too large");
      value = value * 10 + digit;
      ++pos_;
    }
    if (pos_ == start) error("expected a digit");
    if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;  // Python 2
    v.i = negative ? -static_cast<int64_t>(value) : static_cast<int64_t>(value);
    return v;
  }

  PyValue parse_word() {
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    const std::string_view word = text_.substr(start, pos_ - start);
    PyValue v;
    if (word == "True" || word == "False") {
      v.kind = PyValue::Kind::Bool;
      v.b = word == "True";
    } else if (word == "None") {
      v.kind = PyValue::Kind::None;
    } else {
      pos_ = start;
      error(word.empty() ? "unexpected character" : "unknown name '" + std::string(word) + "'");
    }
    return v;
  }

  std::string_view text_;
  const std::string& path_;
  size_t pos_ = 0;
};

// --- dtypes ------------------------------------------------------------------

struct Descr {
  DType dtype;
  bool big_endian;
};

// Maps a NumPy type string ('<f4', '|b1', '>i8', '=u1', ...) to a dtype.
std::optional<Descr> parse_descr(const std::string& d) {
  if (d.size() < 2) return std::nullopt;
  size_t k = 0;
  bool big = false;
  if (d[0] == '<' || d[0] == '|' || d[0] == '=') {
    k = 1;
  } else if (d[0] == '>' || d[0] == '!') {
    k = 1;
    big = true;
  }
  const std::string_view code = std::string_view(d).substr(k);
  static constexpr std::pair<std::string_view, DType> kCodes[] = {
      {"b1", DType::Bool}, {"?", DType::Bool}, {"u1", DType::U8},
      {"i1", DType::I8},   {"i4", DType::I32}, {"i8", DType::I64},
      {"f2", DType::F16},  {"f4", DType::F32}, {"f8", DType::F64},
  };
  for (const auto& [c, dt] : kCodes)
    if (c == code) return Descr{dt, big && dtype_size(dt) > 1};
  return std::nullopt;
}

std::string_view descr_for_write(DType dt) {
  switch (dt) {
    case DType::Bool:
      return "|b1";
    case DType::U8:
      return "|u1";
    case DType::I8:
      return "|i1";
    case DType::I32:
      return "<i4";
    case DType::I64:
      return "<i8";
    case DType::F16:
      return "<f2";
    case DType::F64:
      return "<f8";
    // bf16 and the f8 types have no NumPy dtype; every value is exact in f32.
    case DType::F32:
    case DType::BF16:
    case DType::F8E4M3:
    case DType::F8E5M2:
      return "<f4";
  }
  throw InternalError("write_npy: bad DType");
}

void byteswap_elements(std::byte* p, int64_t n, int size) {
  for (int64_t i = 0; i < n; ++i, p += size) std::reverse(p, p + size);
}

std::string shape_literal(const Shape& shape) {
  // Python's tuple repr: "()", "(5,)", "(2, 3)".
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

uint64_t read_le(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// What a .npy header says, and the stream left at the data.
struct NpyHeader {
  Descr descr;
  std::string descr_text;
  Shape shape;
  int64_t numel = 0;
  uint64_t data_avail = 0;  // bytes after the header
};

// Opens `path` and reads its header (every check read_npy documents but the
// data's); `in` is left at the first data byte.
NpyHeader read_header(const std::string& path, std::ifstream& in) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path, "no such file");
  if (std::filesystem::is_directory(path, ec)) fail(path, "it is a directory");
  // A .npy file is read with seeks and sized from its header: a pipe or a
  // device (a FIFO would block, /dev/zero never ends) is refused.
  if (!std::filesystem::is_regular_file(path, ec)) fail(path, "not a regular file");
  errno = 0;
  in.open(path, std::ios::binary);
  if (!in) fail(path, errno ? std::strerror(errno) : "cannot open the file");
  in.seekg(0, std::ios::end);
  const std::streamoff file_size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (file_size < 0) fail(path, "cannot determine the file size");

  // Magic, version, header length.
  unsigned char prefix[12] = {};
  const size_t prefix_min = kMagicLen + 2 + 2;
  if (static_cast<uint64_t>(file_size) < prefix_min) {
    fail(path, "file too short for a .npy header (" + std::to_string(file_size) + " bytes)");
  }
  in.read(reinterpret_cast<char*>(prefix), prefix_min);
  if (!in) fail(path, "cannot read the header");
  if (std::memcmp(prefix, kMagic, kMagicLen) != 0) fail(path, "bad magic (not a NumPy .npy file)");
  const int major = prefix[6], minor = prefix[7];
  if (major < 1 || major > 3) {
    fail(path, "unsupported format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (1.0, 2.0 and 3.0 are supported)");
  }
  size_t prefix_len = prefix_min;
  uint64_t header_len = 0;
  if (major == 1) {
    header_len = read_le(prefix + 8, 2);
  } else {
    if (static_cast<uint64_t>(file_size) < prefix_min + 2) fail(path, "truncated header");
    in.read(reinterpret_cast<char*>(prefix + prefix_min), 2);
    if (!in) fail(path, "cannot read the header");
    header_len = read_le(prefix + 8, 4);
    prefix_len += 2;
  }
  const uint64_t after_prefix = static_cast<uint64_t>(file_size) - prefix_len;
  if (header_len > after_prefix) {
    fail(path, "truncated header (it claims " + std::to_string(header_len) +
                   " bytes, the file has " + std::to_string(after_prefix) + " after the prefix)");
  }
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  if (!in) fail(path, "cannot read the header");

  // The dict.
  const PyValue dict = HeaderParser(header, path).parse_document();
  if (dict.kind != PyValue::Kind::Dict) fail(path, "the header is not a dict");
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape_v = nullptr;
  for (size_t e = 0; e + 1 < dict.items.size(); e += 2) {
    const PyValue& k = dict.items[e];
    const PyValue& v = dict.items[e + 1];
    if (k.kind != PyValue::Kind::Str) fail(path, "a header key is not a string");
    if (k.s == "descr")
      descr = &v;
    else if (k.s == "fortran_order")
      fortran = &v;
    else if (k.s == "shape")
      shape_v = &v;
    // Unknown keys are ignored: they cannot change how the data is laid out.
  }
  if (!descr) fail(path, "the header has no 'descr'");
  if (!fortran) fail(path, "the header has no 'fortran_order'");
  if (!shape_v) fail(path, "the header has no 'shape'");
  if (descr->kind != PyValue::Kind::Str)
    fail(path, "unsupported dtype (a structured or record dtype)");
  const std::optional<Descr> d = parse_descr(descr->s);
  if (!d) {
    fail(path, "unsupported dtype '" + printable(descr->s) +
                   "' (supported: bool, uint8, int8, int32, int64, float16, float32, float64)");
  }
  if (fortran->kind != PyValue::Kind::Bool) fail(path, "'fortran_order' is not True or False");
  if (shape_v->kind != PyValue::Kind::Tuple && shape_v->kind != PyValue::Kind::List)
    fail(path, "'shape' is not a tuple");
  // NumPy arrays have at most 64 dims (NPY_MAXDIMS, 32 before NumPy 2): a longer
  // shape is no array NumPy wrote, and quoting it whole made a message of any size.
  constexpr size_t kMaxNpyDims = 64;
  if (shape_v->items.size() > kMaxNpyDims)
    fail(path, "'shape' has " + std::to_string(shape_v->items.size()) +
                   " dims; a NumPy array has at most " + std::to_string(kMaxNpyDims));
  Shape shape;
  for (const PyValue& dim : shape_v->items) {
    if (dim.kind != PyValue::Kind::Int) fail(path, "'shape' holds a non-integer");
    if (dim.i < 0) fail(path, "'shape' holds a negative size " + std::to_string(dim.i));
    shape.push_back(dim.i);
  }
  // A zero dim makes the array empty whatever the other dims are.
  const std::optional<int64_t> count = checked_numel(shape);
  if (!count)
    fail(path, "'shape' " + shape_to_string(shape) + " is too large: more than 2^63 elements");
  const int64_t numel = *count;
  // C and Fortran order lay out the bytes the same when at most one dim is
  // longer than 1 (NumPy itself writes 1-D arrays as fortran_order False).
  if (fortran->b && std::count_if(shape.begin(), shape.end(), [](int64_t n) { return n > 1; }) > 1)
    fail(path, "Fortran-order arrays are not supported (save with np.ascontiguousarray)");

  NpyHeader h;
  h.descr = *d;
  h.descr_text = descr->s;
  h.shape = std::move(shape);
  h.numel = numel;
  h.data_avail = after_prefix - header_len;
  return h;
}

}  // namespace

NpyInfo read_npy_info(const std::string& path) {
  std::ifstream in;
  const NpyHeader h = read_header(path, in);
  return {h.descr.dtype, h.shape};
}

Tensor read_npy(const std::string& path) {
  std::ifstream in;
  const NpyHeader h = read_header(path, in);
  const Descr* const d = &h.descr;
  const Shape& shape = h.shape;
  const int64_t numel = h.numel;

  // The data: check its size against the file before allocating.
  const int item = dtype_size(d->dtype);
  const uint64_t data_avail = h.data_avail;
  int64_t nbytes = 0;
  const bool overflow = __builtin_mul_overflow(numel, static_cast<int64_t>(item), &nbytes);
  if (overflow || static_cast<uint64_t>(nbytes) > data_avail) {
    fail(path, "truncated data (shape " + shape_to_string(shape) + " of '" + h.descr_text +
                   "' needs " +
                   (overflow ? std::string("more than 2^63") : std::to_string(nbytes)) +
                   " bytes, the file has " + std::to_string(data_avail) + ")");
  }
  const AllocationPurpose purpose("the contents of " + path);
  Tensor t = Tensor::empty(d->dtype, shape);
  if (nbytes > 0) {
    in.read(reinterpret_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(nbytes));
    if (!in) fail(path, "cannot read the data");
  }
  if (d->big_endian) byteswap_elements(t.data_ptr(), numel, item);
  if (d->dtype == DType::Bool) {
    // NumPy bools are 0/1; normalise anything else so kernels that read the
    // raw byte agree with load_element.
    auto* p = reinterpret_cast<uint8_t*>(t.data_ptr());
    for (int64_t i = 0; i < numel; ++i) p[i] = p[i] != 0;
  }
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  TF_CHECK(t.defined(), "write_npy of an undefined tensor");
  const std::string_view descr = descr_for_write(t.dtype());
  const DType file_dtype = descr == "<f4" ? DType::F32 : t.dtype();
  const Tensor data = file_dtype == t.dtype() ? t.contiguous() : t.to(file_dtype);

  // The header dict, as numpy.lib.format writes it, padded with spaces so
  // that prefix + header is a multiple of 64 and ends in '\n'.
  std::string header = "{'descr': '" + std::string(descr) +
                       "', 'fortran_order': False, 'shape': " + shape_literal(t.shape()) + ", }";
  size_t prefix_len = kMagicLen + 2 + 2;
  if (((prefix_len + header.size() + 1 + kHeaderAlign - 1) / kHeaderAlign) * kHeaderAlign -
          prefix_len >
      65535) {
    prefix_len += 2;  // version 2.0: 4-byte header length
  }
  const size_t total =
      ((prefix_len + header.size() + 1 + kHeaderAlign - 1) / kHeaderAlign) * kHeaderAlign;
  header.append(total - prefix_len - header.size() - 1, ' ');
  header += '\n';
  const uint64_t hlen = header.size();
  std::string prefix(kMagic, kMagicLen);
  prefix += static_cast<char>(prefix_len == 10 ? 1 : 2);
  prefix += '\0';
  for (size_t i = 0; i < prefix_len - kMagicLen - 2; ++i)
    prefix += static_cast<char>((hlen >> (8 * i)) & 0xFF);

  // Write a temporary file next to the target, then rename it over the target:
  // readers see either the old file or the complete new one.
  static std::atomic<uint64_t> counter{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  auto io_fail = [&](const std::string& what) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    throw UserError("cannot write .npy file '" + path + "': " + what + ": " + reason);
  };
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    throw UserError("cannot write .npy file '" + path + "': " + std::strerror(errno));
  }
  const size_t nbytes = static_cast<size_t>(data.numel()) * dtype_size(file_dtype);
  bool ok = std::fwrite(prefix.data(), 1, prefix.size(), f) == prefix.size() &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            (nbytes == 0 || std::fwrite(data.data_ptr(), 1, nbytes, f) == nbytes) &&
            std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) io_fail("write failed");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) io_fail("rename failed");
}

}  // namespace tilefuse
