// Random program inputs, reproducible from a seed on every machine.
//
// The generator is our own, not <random>: the standard engines are portable
// but the distributions (uniform_real_distribution, uniform_int_distribution,
// shuffle) are implementation-defined, so libstdc++ and libc++ would give
// different inputs for the same seed. We use xoshiro256** (Blackman & Vigna,
// "Scrambled linear pseudorandom number generators", 2021) seeded through
// splitmix64, as its authors recommend, and derive every distribution here.
#include "reference/inputs.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "core/error.h"

namespace tilefuse {

namespace {

// splitmix64's output function (Steele, Lea & Flood, "Fast splittable
// pseudorandom number generators", 2014): a bijective 64-bit mixer.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  // One independent stream per (seed, stream) pair: the stream number is
  // mixed into the splitmix64 state that fills xoshiro's 256-bit state.
  Rng(uint64_t seed, uint64_t stream) {
    uint64_t sm = mix64(mix64(seed) + stream);
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

  // Uniform in [0, 1): the top 53 bits, so every value is a multiple of 2^-53.
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1p-53; }

  // Uniform in [0, n) without modulo bias (n == 0 means 2^64): values of
  // next() below 2^64 mod n are rejected, so the accepted ones cover every
  // residue equally often (the arc4random_uniform scheme).
  uint64_t below(uint64_t n) {
    if (n == 0) return next();
    const uint64_t threshold = (0 - n) % n;
    while (true) {
      const uint64_t r = next();
      if (r >= threshold) return r % n;
    }
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

// Writes an integer into element i of a contiguous integer tensor without
// going through double (i64 values past 2^53 stay exact).
void store_int(const Tensor& t, int64_t i, int64_t v) {
  std::byte* p = t.data_ptr() + i * dtype_size(t.dtype());
  switch (t.dtype()) {
    case DType::U8:
      *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(v);
      return;
    case DType::I8:
      *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(v);
      return;
    case DType::I32: {
      const int32_t x = static_cast<int32_t>(v);
      std::memcpy(p, &x, sizeof x);
      return;
    }
    case DType::I64:
      std::memcpy(p, &v, sizeof v);
      return;
    default:
      TF_CHECK(false, "store_int on " + std::string(dtype_name(t.dtype())));
  }
}

// The smallest size among the dims that parameter `param` indexes, or
// nullopt when it is never used as a gather index. A use is an Index node
// whose index operand (inputs[1]) is the parameter itself or a value that
// only rearranges or converts its elements (views, casts and gathers of it),
// since those carry the parameter's values unchanged into the gather.
std::optional<int64_t> indexed_size(const Graph& g, ValueId param) {
  std::vector<bool> carries(static_cast<size_t>(g.size()), false);
  carries[static_cast<size_t>(param)] = true;
  std::optional<int64_t> size;
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
        size = size ? std::min(*size, s) : s;
        break;
      }
      default:
        break;
    }
  }
  return size;
}

void fill_floating(const Tensor& t, Rng& rng) {
  const DType dt = t.dtype();
  const int64_t n = t.numel();
  const int64_t es = dtype_size(dt);
  std::byte* p = t.data_ptr();
  for (int64_t i = 0; i < n; ++i) {
    // Uniform in [-1, 1) (exact: 2u - 1 only shifts the exponent), rounded
    // to the dtype. A draw that rounds to 0 or up to 1 is drawn again, so
    // every element is nonzero and inside [-1, 1) after rounding.
    double v;
    do {
      v = round_to(dt, 2.0 * rng.uniform01() - 1.0);
    } while (v == 0.0 || v >= 1.0);
    store_element(dt, p + i * es, v);
  }
}

void fill_uniform_int(const Tensor& t, Rng& rng, int64_t lo, int64_t hi) {
  TF_CHECK(lo < hi, "empty integer range");
  const uint64_t width = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  for (int64_t i = 0; i < t.numel(); ++i)
    store_int(t, i, static_cast<int64_t>(static_cast<uint64_t>(lo) + rng.below(width)));
}

// An explicit `in [lo, hi)` usually probes an edge (negative indices, one
// past the end), so both ends of the range are always drawn: lo and hi-1 are
// written at two distinct random positions (when the tensor has room). A
// program whose range reaches an invalid index then fails on every seed,
// not on some.
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
// in-place form: Knuth, TAOCP vol. 2, 3.4.2, Algorithm P).
void fill_permutation(const Tensor& t, Rng& rng) {
  const int64_t n = t.numel();
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i + 1)));
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  }
  for (int64_t i = 0; i < n; ++i) store_int(t, i, perm[static_cast<size_t>(i)]);
}

void fill_integer(const Graph& g, ValueId param, const Tensor& t, Rng& rng) {
  const Node& node = g.node(param);
  const auto [dlo, dhi] = dtype_range(t.dtype());
  if (node.range) {
    // The graph checked that the range is non-empty and fits the dtype;
    // clip anyway so a hand-built graph cannot make us wrap.
    const int64_t lo = std::max(node.range->lo, dlo), hi = std::min(node.range->hi, dhi);
    TF_CHECK(lo < hi, "parameter `" + node.name + "`: range does not fit its dtype");
    fill_uniform_int(t, rng, lo, hi);
    place_range_ends(t, rng, lo, hi);
    return;
  }
  if (const std::optional<int64_t> size = indexed_size(g, param)) {
    const int64_t hi = std::min(*size, dhi);
    if (hi <= 0) {
      // The indexed dim is empty: no index is valid. Zeros make the run
      // report the bad index rather than us inventing a range.
      t.fill(0);
      return;
    }
    if (t.numel() == *size && *size == hi) {
      fill_permutation(t, rng);
    } else {
      fill_uniform_int(t, rng, 0, hi);
    }
    return;
  }
  fill_uniform_int(t, rng, std::max<int64_t>(dlo, -128), std::min<int64_t>(dhi, 128));
}

}  // namespace

std::vector<Tensor> make_random_inputs(const Graph& g, uint64_t seed) {
  std::vector<Tensor> inputs;
  inputs.reserve(g.parameters().size());
  for (size_t pos = 0; pos < g.parameters().size(); ++pos) {
    const ValueId param = g.parameters()[pos];
    const Node& node = g.node(param);
    Tensor t = Tensor::empty(node.dtype, node.shape);
    // A stream per parameter position: adding a parameter leaves the values
    // of the parameters before it, and of any parameter whose position does
    // not change, as they were.
    Rng rng(seed, pos);
    if (node.dtype == DType::Bool) {
      auto* p = reinterpret_cast<uint8_t*>(t.data_ptr());
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<uint8_t>(rng.next() >> 63);
    } else if (is_floating(node.dtype)) {
      fill_floating(t, rng);
    } else {
      fill_integer(g, param, t, rng);
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

}  // namespace tilefuse
