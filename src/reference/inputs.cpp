// Random program inputs, reproducible from a seed on every machine and with
// any number of threads.
//
// The generator is our own, not <random>: the standard engines are portable
// but the distributions (uniform_real_distribution, uniform_int_distribution,
// shuffle) are implementation-defined, so libstdc++ and libc++ would give
// different inputs for the same seed. We use xoshiro256** (Blackman & Vigna,
// "Scrambled linear pseudorandom number generators", 2021) seeded through
// splitmix64, as its authors recommend, and derive every distribution here.
//
// Parallel yet deterministic: a parameter's elements are cut into blocks of
// kBlock elements (a constant, not derived from the thread count), and each
// block draws from its own stream, seeded from (seed, parameter position,
// block number). Blocks may then be filled in any order on any thread and
// give the same bytes. (One stream per tensor would be serial: a xoshiro
// stream cannot be jumped ahead by a block's worth of elements, because
// rejection sampling takes a variable number of draws per element.)
//
// Fast: each element is drawn and encoded with integer arithmetic specialised
// per dtype at compile time. The former per-element round_to + store_element
// (a dtype switch, then frexp/ldexp/floor/fmod, generic over formats, done
// twice, then the f32 -> f16 encoder) cost ~40 ns an element on one thread;
// this costs ~5 (test_reference's InputsBench; figures in bench/RESULTS.md).
#include "reference/inputs.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "core/memory.h"
#include "reference/thread_pool.h"

namespace tilefuse {

namespace {

// Elements per block, i.e. per stream: large enough that seeding a stream
// (a few ns) and claiming a task (a mutex round trip) are noise, small enough
// that the seed program's 8.4M elements give ~130 blocks to share among the
// threads. A multiple of 64, so a bool block uses whole 64-bit draws.
// Changing it changes every tensor of more than one block.
constexpr int64_t kBlock = int64_t{1} << 16;

// The stream of a parameter's `in [lo, hi)` ends (place_range_ends): past
// every block number.
constexpr uint64_t kEndsStream = ~uint64_t{0};

// splitmix64's output function (Steele, Lea & Flood, "Fast splittable
// pseudorandom number generators", 2014): a bijective 64-bit mixer.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  // One independent stream per (seed, parameter position, block): each
  // number is mixed in turn into the splitmix64 state that fills xoshiro's
  // 256-bit state.
  Rng(uint64_t seed, uint64_t param, uint64_t block) {
    uint64_t sm = mix64(mix64(mix64(seed) + param) + block);
    for (uint64_t& w : s_) {
      sm += 0x9E3779B97F4A7C15ull;
      w = mix64(sm);
    }
    // xoshiro's state must not be all zero; splitmix64 outputs never are all
    // four zero (it is a bijection of distinct inputs), but be explicit.
    if ((s_[0] | s_[1] | s_[2] | s_[3]) == 0) s_[0] = 1;
  }

  // xoshiro256** 1.0.
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n) without bias (n == 0 means 2^64), by Lemire's
  // multiply-and-reject ("Fast random integer generation in an interval",
  // ACM TOMACS 2019): the high word of next() * n, redrawn when the low word
  // falls below 2^64 mod n, so that every result covers equally many draws.
  // One multiplication per value; the division only on the rare path.
  uint64_t below(uint64_t n) {
    if (n == 0) return next();
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    auto low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// The values an integer dtype can hold, as a half-open range [lo, hi).
// hi is exclusive, so i64 stops one short of its maximum (never drawn then,
// which no program can notice).
std::pair<int64_t, int64_t> dtype_range(DType dt) {
  switch (dt) {
    case DType::U8:
      return {0, 256};
    case DType::I8:
      return {-128, 128};
    case DType::I32:
      return {std::numeric_limits<int32_t>::min(), int64_t{1} << 31};
    default:
      return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

// Calls f(T{}) with T the C++ type of integer dtype `dt`.
template <class F>
void with_int_type(DType dt, F&& f) {
  switch (dt) {
    case DType::U8:
      return f(uint8_t{});
    case DType::I8:
      return f(int8_t{});
    case DType::I32:
      return f(int32_t{});
    case DType::I64:
      return f(int64_t{});
    default:
      TF_CHECK(false, "not an integer dtype: " + std::string(dtype_name(dt)));
  }
}

template <class T>
T* data_as(const Tensor& t) {
  return reinterpret_cast<T*>(t.data_ptr());
}

// The bits of k * 2^-52 (0 < |k| <= 2^52) rounded to nearest even in an
// IEEE-style binary format of `Width` bits with `M` explicit mantissa bits
// and exponent bias `Bias` (f16, bf16, f8e5m2; f8e4m3fn too, whose only
// departure from IEEE, at its top binade, lies far above 1): round_to's
// rounding (dtype.cpp, round_to_format) and store_element's encoding, in
// integer arithmetic.
//
// Normal results (one shift-and-add on a double's bits): k is exact in
// double (|k| <= 2^52) and has v's mantissa, its exponent 52 higher; a
// double's bits, sign aside, are its exponent field then 52 mantissa bits,
// so rounding them to the top M mantissa bits is adding half an ulp of the
// format less one plus the lowest kept bit (ties go to even) and shifting
// the 52 - M dropped bits out; a carry out of the mantissa lands on the next
// exponent, as it should. Rebiasing the exponent field from k's (1023, plus
// 52 for the scale) to v's in the format (Bias) gives the encoding.
// Subnormal results (|v| below the smallest normal 2^(1-Bias): 2^-14 of the
// draws for f16, 2^-6 for f8e4m3, none for bf16): the format's spacing
// there is 2^(1-Bias-M), 2^s units of 2^-52, and the encoding is |k| rounded
// to a multiple of it the same way, counted in steps (2^M steps, a carry,
// is the smallest normal's encoding).
template <int Width, int M, int Bias>
uint32_t narrow_bits(int64_t k) {
  constexpr int kDrop = 52 - M;
  constexpr uint64_t kSignBit = uint64_t{1} << 63;
  const uint64_t d = std::bit_cast<uint64_t>(static_cast<double>(k));
  const uint64_t mag = d & ~kSignBit;
  uint32_t bits;
  if constexpr (1 - Bias > -52) {  // 2^-52 <= |v| may lie below the smallest normal
    if (mag < (uint64_t{1023 + 52 + 1 - Bias} << 52)) {  // |v| < 2^(1-Bias)
      constexpr int s = 1 - Bias - M + 52;
      static_assert(s > 0 && s < 64);
      const uint64_t a = d & kSignBit ? 0 - static_cast<uint64_t>(k) : static_cast<uint64_t>(k);
      bits = static_cast<uint32_t>((a + ((uint64_t{1} << (s - 1)) - 1) + ((a >> s) & 1)) >> s);
      return bits | static_cast<uint32_t>(d >> 63) << (Width - 1);
    }
  }
  const uint64_t rounded =
      (mag + ((uint64_t{1} << (kDrop - 1)) - 1) + ((mag >> kDrop) & 1)) >> kDrop;
  bits = static_cast<uint32_t>(rounded - (uint64_t{1023 + 52 - Bias} << M));
  return bits | static_cast<uint32_t>(d >> 63) << (Width - 1);
}

// How DT's elements are stored (T) and, for narrow_bits, the format's width,
// explicit mantissa bits and exponent bias.
template <DType DT>
struct FloatBits;
template <>
struct FloatBits<DType::F64> {
  using T = uint64_t;
};
template <>
struct FloatBits<DType::F32> {
  using T = uint32_t;
};
template <>
struct FloatBits<DType::F16> {
  using T = uint16_t;
  static constexpr int kWidth = 16, kMantissa = 10, kBias = 15;
};
template <>
struct FloatBits<DType::BF16> {
  using T = uint16_t;
  static constexpr int kWidth = 16, kMantissa = 7, kBias = 127;
};
template <>
struct FloatBits<DType::F8E4M3> {
  using T = uint8_t;
  static constexpr int kWidth = 8, kMantissa = 3, kBias = 7;
};
template <>
struct FloatBits<DType::F8E5M2> {
  using T = uint8_t;
  static constexpr int kWidth = 8, kMantissa = 2, kBias = 15;
};

// The encoding of k * 2^-52 (|k| <= 2^52) rounded to DT, in `bits`; false
// when it is zero (k == 0, or too small for f16 and f8) or rounds up to 1,
// values the caller draws again.
template <DType DT>
bool grid_bits(int64_t k, typename FloatBits<DT>::T& bits) {
  if (k == 0) return false;
  const double v = static_cast<double>(k) * 0x1p-52;  // exact: |k| <= 2^52
  if constexpr (DT == DType::F64) {
    bits = std::bit_cast<uint64_t>(v);
    return v < 1.0;  // only k = 2^52, never drawn
  } else if constexpr (DT == DType::F32) {
    const auto f = static_cast<float>(v);  // one IEEE RNE rounding, as round_to
    bits = std::bit_cast<uint32_t>(f);
    return f < 1.0f;  // never 0: 2^-52 is an f32
  } else {
    // Through f32 first, as round_to (PyTorch's cast). The f32 value is
    // k' * 2^-52 for an integer k': v itself when it has at most 24
    // significant bits, else v rounded at an ulp of at least 2^-51. Then
    // the integer rounding to the format.
    using F = FloatBits<DT>;
    const auto k32 = static_cast<int64_t>(static_cast<double>(static_cast<float>(v)) * 0x1p52);
    const uint32_t b = narrow_bits<F::kWidth, F::kMantissa, F::kBias>(k32);
    bits = static_cast<typename F::T>(b);
    const uint32_t magnitude = b & ((uint32_t{1} << (F::kWidth - 1)) - 1);
    return magnitude != 0 && (k < 0 || magnitude < (uint32_t{F::kBias} << F::kMantissa));
  }
}

// Elements [begin, end): uniform in [-1, 1) (2u - 1 with u on the grid of
// 2^-53, i.e. k * 2^-52 with k uniform in [-2^52, 2^52)), rounded to the
// dtype. A draw that rounds to 0 or up to 1 is drawn again, so every element
// is nonzero and inside [-1, 1) after rounding.
template <DType DT>
void fill_floating(Rng& rng, std::byte* data, int64_t begin, int64_t end) {
  using T = typename FloatBits<DT>::T;
  T* p = reinterpret_cast<T*>(data);
  for (int64_t i = begin; i < end; ++i) {
    T bits;
    while (!grid_bits<DT>(static_cast<int64_t>(rng.next() >> 11) - (int64_t{1} << 52), bits)) {
    }
    p[i] = bits;
  }
}

using FillFn = std::function<void(Rng& rng, int64_t begin, int64_t end)>;

template <DType DT>
FillFn floating_filler_for(std::byte* data) {
  return [data](Rng& rng, int64_t b, int64_t e) { fill_floating<DT>(rng, data, b, e); };
}

FillFn floating_filler(const Tensor& t) {
  switch (t.dtype()) {
    case DType::F64:
      return floating_filler_for<DType::F64>(t.data_ptr());
    case DType::F32:
      return floating_filler_for<DType::F32>(t.data_ptr());
    case DType::F16:
      return floating_filler_for<DType::F16>(t.data_ptr());
    case DType::BF16:
      return floating_filler_for<DType::BF16>(t.data_ptr());
    case DType::F8E4M3:
      return floating_filler_for<DType::F8E4M3>(t.data_ptr());
    case DType::F8E5M2:
      return floating_filler_for<DType::F8E5M2>(t.data_ptr());
    default:
      TF_CHECK(false, "not a floating dtype: " + std::string(dtype_name(t.dtype())));
  }
  return {};
}

// Uniform in [lo, hi) (the range fits T).
FillFn uniform_int_filler(const Tensor& t, int64_t lo, int64_t hi) {
  TF_CHECK(lo < hi, "empty integer range");
  const uint64_t width = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  FillFn fill;
  with_int_type(t.dtype(), [&]<class T>(T) {
    T* p = data_as<T>(t);
    fill = [p, lo, width](Rng& rng, int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        p[i] = static_cast<T>(static_cast<int64_t>(static_cast<uint64_t>(lo) + rng.below(width)));
    };
  });
  return fill;
}

// Writes an integer into element i of a contiguous integer tensor without
// going through double (i64 values past 2^53 stay exact).
void store_int(const Tensor& t, int64_t i, int64_t v) {
  with_int_type(t.dtype(), [&]<class T>(T) { data_as<T>(t)[i] = static_cast<T>(v); });
}

// An explicit `in [lo, hi)` usually probes an edge (negative indices, one
// past the end), so both ends of the range are always drawn: lo and hi-1 are
// written at two distinct random positions (when the tensor has room), from
// the parameter's own kEndsStream after its blocks are filled. A program
// whose range reaches an invalid index then fails on every seed, not on some.
void place_range_ends(const Tensor& t, Rng& rng, int64_t lo, int64_t hi) {
  const int64_t n = t.numel();
  if (n == 0) return;
  const auto first = static_cast<int64_t>(rng.below(static_cast<uint64_t>(n)));
  store_int(t, first, lo);
  if (n == 1 || hi - 1 == lo) return;
  auto second = static_cast<int64_t>(rng.below(static_cast<uint64_t>(n - 1)));
  if (second >= first) ++second;
  store_int(t, second, hi - 1);
}

// A uniformly random permutation of 0 .. n-1 (Fisher–Yates, Durstenfeld's
// in-place form: Knuth, TAOCP vol. 2, 3.4.2, Algorithm P), shuffled in place
// in the tensor (n fits T: it is at most the dtype's hi). Inherently serial:
// one task and one stream for the whole tensor.
FillFn permutation_filler(const Tensor& t) {
  FillFn fill;
  with_int_type(t.dtype(), [&]<class T>(T) {
    T* p = data_as<T>(t);
    fill = [p](Rng& rng, int64_t b, int64_t e) {
      TF_CHECK(b == 0, "a permutation is one task");
      for (int64_t i = 0; i < e; ++i) p[i] = static_cast<T>(i);
      for (int64_t i = e - 1; i > 0; --i)
        std::swap(p[i], p[rng.below(static_cast<uint64_t>(i + 1))]);
    };
  });
  return fill;
}

// Elements [begin, end) (begin a multiple of 64): a fair coin each, the bits
// of one draw from the top down for 64 elements.
FillFn bool_filler(const Tensor& t) {
  auto* p = data_as<uint8_t>(t);
  return [p](Rng& rng, int64_t b, int64_t e) {
    uint64_t bits = 0;
    for (int64_t i = b; i < e; ++i) {
      if ((i - b) % 64 == 0) bits = rng.next();
      p[i] = static_cast<uint8_t>(bits >> 63);
      bits <<= 1;
    }
  };
}

// A dim that a parameter indexes: the indexed value, the dim and its size.
struct IndexedDim {
  ValueId value = -1;
  int64_t dim = 0;
  int64_t size = 0;
};

// The smallest among the dims that parameter `param` indexes (the first of
// them on a tie), or nullopt when it is never used as a gather index. A use
// is an Index node whose index operand (inputs[1]) is the parameter itself
// or a value that only rearranges or converts its elements (views, casts and
// gathers of it), since those carry the parameter's values unchanged into
// the gather.
std::optional<IndexedDim> indexed_dim(const Graph& g, ValueId param) {
  std::vector<bool> carries(static_cast<size_t>(g.size()), false);
  carries[static_cast<size_t>(param)] = true;
  std::optional<IndexedDim> smallest;
  for (ValueId v = param + 1; v < g.size(); ++v) {
    const Node& n = g.node(v);
    if (n.inputs.empty()) continue;
    const bool from_param = carries[static_cast<size_t>(n.inputs[0])];
    switch (n.kind) {
      case OpKind::Slice:
      case OpKind::Permute:
      case OpKind::Expand:
      case OpKind::Select:
      case OpKind::Cast:
        carries[static_cast<size_t>(v)] = from_param;
        break;
      case OpKind::Index: {
        // Gathering the parameter's elements carries them too
        // (`x[idx[idx2]]`: idx indexes x through the gather idx[idx2]).
        carries[static_cast<size_t>(v)] = from_param;
        if (n.inputs.size() < 2 || !carries[static_cast<size_t>(n.inputs[1])]) break;
        const Node& x = g.node(n.inputs[0]);
        TF_CHECK(n.dim >= 0 && n.dim < static_cast<int64_t>(x.shape.size()),
                 "index node with a bad dim");
        const int64_t s = x.shape[static_cast<size_t>(n.dim)];
        if (!smallest || s < smallest->size) smallest = IndexedDim{n.inputs[0], n.dim, s};
        break;
      }
      default:
        break;
    }
  }
  return smallest;
}

// "dim 0 of `x` (f16[T, 64] with T = 0)": the indexed dim, for messages.
std::string describe_indexed_dim(const Graph& g, const IndexedDim& d) {
  const Node& x = g.node(d.value);
  std::string what = !x.name.empty() ? "`" + x.name + "`" : "%" + std::to_string(d.value);
  std::string type = std::string(dtype_name(x.dtype)) + symbolic_shape_string(g, x);
  const SymbolId s = x.symbol(static_cast<size_t>(d.dim));
  if (s != kFixedDim)
    type += " with " + g.symbols()[static_cast<size_t>(s)].name + " = " + std::to_string(d.size);
  return fmt::format("dim {} of {} ({})", d.dim, what, type);
}

// How one parameter is drawn: `fill` writes elements [begin, end) from the
// stream it is given; `whole` fills the tensor as one task (a permutation),
// else it is split into blocks. `ends` is the range whose two ends
// place_range_ends writes afterwards.
struct ParamPlan {
  FillFn fill;
  bool whole = false;
  std::optional<std::pair<int64_t, int64_t>> ends;
};

ParamPlan plan_integer(const Graph& g, ValueId param, const Tensor& t) {
  const Node& node = g.node(param);
  const auto [dlo, dhi] = dtype_range(t.dtype());
  if (node.range) {
    // The graph checked that the range is non-empty and fits the dtype;
    // clip anyway so a hand-built graph cannot make us wrap.
    const int64_t lo = std::max(node.range->lo, dlo), hi = std::min(node.range->hi, dhi);
    // A range with a symbolic bound can be empty at some binding.
    if (lo >= hi && t.numel() == 0) return {};
    // (A fixed range was checked to fit the dtype at compile time; a
    // symbolic one may lie outside it at this binding, and then the message
    // must not call a non-empty range empty.)
    if (lo >= hi && (node.range->lo_symbol != kFixedDim || node.range->hi_symbol != kFixedDim)) {
      const std::string range = "parameter `" + node.name + "`: its range is [" +
                                std::to_string(node.range->lo) + ", " +
                                std::to_string(node.range->hi) + ") at these sizes";
      if (node.range->lo >= node.range->hi)
        throw UserError(range + ", so no random value can be drawn", node.loc);
      const std::string dt(dtype_name(t.dtype()));
      throw UserError(fmt::format("{}, which holds no {} value ({} holds [{}, {}]), so no random "
                                  "value can be drawn",
                                  range, dt, dt, dlo, dhi - 1),
                      node.loc);
    }
    TF_CHECK(lo < hi, "parameter `" + node.name + "`: range does not fit its dtype");
    return {uniform_int_filler(t, lo, hi), false, std::pair{lo, hi}};
  }
  if (const std::optional<IndexedDim> indexed = indexed_dim(g, param)) {
    const int64_t size = indexed->size;
    const int64_t hi = std::min(size, dhi);
    if (hi <= 0) {
      if (t.numel() == 0) return {};
      // The indexed dim is empty: no index is valid, so no value can be
      // drawn. Saying so beats drawing zeros that the run then reports as
      // an out-of-bounds index, as if the program were wrong.
      throw UserError(fmt::format("cannot draw a random index for parameter `{}`: it indexes "
                                  "{}, whose size is 0, so no index value is valid (give `{}` as "
                                  "an input, or that dim a size above 0)",
                                  node.name, describe_indexed_dim(g, *indexed), node.name),
                      node.loc);
    }
    if (t.numel() == size && size == hi) return {permutation_filler(t), true, std::nullopt};
    return {uniform_int_filler(t, 0, hi), false, std::nullopt};
  }
  return {uniform_int_filler(t, std::max<int64_t>(dlo, -128), std::min<int64_t>(dhi, 128)), false,
          std::nullopt};
}

}  // namespace

std::vector<Tensor> make_random_inputs(const Graph& g, uint64_t seed, int num_threads,
                                       const std::vector<bool>& given) {
  const size_t num_params = g.parameters().size();
  std::vector<Tensor> inputs;
  std::vector<ParamPlan> plans(num_params);
  inputs.reserve(num_params);
  for (size_t pos = 0; pos < num_params; ++pos) {
    const ValueId param = g.parameters()[pos];
    const Node& node = g.node(param);
    if (pos < given.size() && given[pos]) {
      inputs.emplace_back();  // the caller's (no plan: no task draws it)
      continue;
    }
    const AllocationPurpose purpose("input `" + node.name + "`");
    Tensor t = Tensor::empty(node.dtype, node.shape);
    if (node.dtype == DType::Bool) {
      plans[pos].fill = bool_filler(t);
    } else if (is_floating(node.dtype)) {
      plans[pos].fill = floating_filler(t);
    } else {
      plans[pos] = plan_integer(g, param, t);
    }
    inputs.push_back(std::move(t));
  }

  // The tasks: whole-tensor ones first (the longest; started early they
  // overlap the blocks), then every block of every parameter. A stream per
  // parameter position and block: adding a parameter leaves the values of
  // the parameters before it, and of any parameter whose position does not
  // change, as they were.
  struct Task {
    size_t pos;
    int64_t block;  // the stream; elements [block * kBlock, ...) unless whole
  };
  std::vector<Task> tasks;
  for (size_t pos = 0; pos < num_params; ++pos)
    if (plans[pos].fill && plans[pos].whole && inputs[pos].numel() > 0) tasks.push_back({pos, 0});
  for (size_t pos = 0; pos < num_params; ++pos) {
    if (!plans[pos].fill || plans[pos].whole) continue;
    for (int64_t b = 0; b * kBlock < inputs[pos].numel(); ++b) tasks.push_back({pos, b});
  }
  auto run_task = [&](const Task& task) {
    const int64_t n = inputs[task.pos].numel();
    Rng rng(seed, task.pos, static_cast<uint64_t>(task.block));
    if (plans[task.pos].whole) {
      plans[task.pos].fill(rng, 0, n);
    } else {
      const int64_t begin = task.block * kBlock;
      plans[task.pos].fill(rng, begin, std::min(n, begin + kBlock));
    }
  };
  int threads =
      num_threads > 0 ? num_threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = static_cast<int>(std::min<int64_t>(std::max(threads, 1), std::ssize(tasks)));
  if (threads <= 1) {
    // One thread asked for, or one task (inputs of a block or less, as in
    // most tests): no threads to start.
    for (const Task& task : tasks) run_task(task);
  } else {
    reference::ThreadPool pool(threads);
    pool.parallel_for(std::ssize(tasks), 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) run_task(tasks[static_cast<size_t>(i)]);
    });
  }

  for (size_t pos = 0; pos < num_params; ++pos) {
    if (!plans[pos].ends) continue;
    Rng rng(seed, pos, kEndsStream);
    place_range_ends(inputs[pos], rng, plans[pos].ends->first, plans[pos].ends->second);
  }
  return inputs;
}

namespace detail {

uint64_t random_float_bits(DType dt, int64_t k) {
  auto get = [k]<DType DT>() -> uint64_t {
    typename FloatBits<DT>::T bits{};
    if (!grid_bits<DT>(k, bits)) return ~uint64_t{0};
    return bits;
  };
  switch (dt) {
    case DType::F64:
      return get.operator()<DType::F64>();
    case DType::F32:
      return get.operator()<DType::F32>();
    case DType::F16:
      return get.operator()<DType::F16>();
    case DType::BF16:
      return get.operator()<DType::BF16>();
    case DType::F8E4M3:
      return get.operator()<DType::F8E4M3>();
    case DType::F8E5M2:
      return get.operator()<DType::F8E5M2>();
    default:
      TF_CHECK(false, "random_float_bits on " + std::string(dtype_name(dt)));
  }
  return 0;
}

}  // namespace detail

}  // namespace tilefuse
