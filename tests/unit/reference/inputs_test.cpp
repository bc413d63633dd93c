// Random inputs: reproducible per seed and bit-identical with any thread
// count, streams per parameter and block, ranges and index validity
// respected, floats nonzero inside [-1, 1) and rounded as round_to rounds.
#include "reference/inputs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.h"

namespace tilefuse {
namespace {

// Elements per block (one stream each) in inputs.cpp: sizes below straddle it.
constexpr int64_t kBlock = int64_t{1} << 16;

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), a.numel() * dtype_size(a.dtype())) == 0;
}

std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> out;
  for (double v : t.to_vector()) out.push_back(static_cast<int64_t>(v));
  return out;
}

// The gather_mm example: x[index] @ y.
Graph gather_mm(int64_t m, int64_t k, int64_t n_index) {
  Graph g;
  const ValueId x = g.parameter("x", DType::F16, {m, k}, std::nullopt, {});
  const ValueId y = g.parameter("y", DType::F16, {k, 16}, std::nullopt, {});
  const ValueId idx = g.parameter("index", DType::I64, {n_index}, std::nullopt, {});
  g.add_output(g.matmul(g.index(x, 0, idx, {}), y, {}));
  return g;
}

TEST(RandomInputs, DeterministicPerSeed) {
  const Graph g = gather_mm(64, 32, 50);
  const std::vector<Tensor> a = make_random_inputs(g, 1234);
  const std::vector<Tensor> b = make_random_inputs(g, 1234);
  const std::vector<Tensor> c = make_random_inputs(g, 1235);
  ASSERT_EQ(a.size(), 3u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(a[i].is_contiguous());
    EXPECT_EQ(a[i].dtype(), g.node(g.parameters()[i]).dtype);
    EXPECT_EQ(a[i].shape(), g.node(g.parameters()[i]).shape);
    EXPECT_TRUE(same_bytes(a[i], b[i])) << i;
    EXPECT_FALSE(same_bytes(a[i], c[i])) << i;
  }
  // x and y draw from different streams even where their shapes agree.
  Graph g2;
  g2.parameter("p", DType::F32, {8}, std::nullopt, {});
  g2.parameter("q", DType::F32, {8}, std::nullopt, {});
  const std::vector<Tensor> pq = make_random_inputs(g2, 5);
  EXPECT_FALSE(same_bytes(pq[0], pq[1]));
}

// The generator is ours (not <random>'s implementation-defined distributions),
// so these values are the same with every compiler, standard library and
// thread count. A change here changes every seeded run: update only on
// purpose. `h` pins the first elements of its second block too (the block
// size and the per-block streams).
TEST(RandomInputs, PinnedValues) {
  Graph g;
  g.parameter("f", DType::F64, {3}, std::nullopt, {});
  g.parameter("i", DType::I64, {3}, IntRange{-1000000, 1000000}, {});
  g.parameter("b", DType::Bool, {8}, std::nullopt, {});
  g.parameter("h", DType::F16, {kBlock + 2}, std::nullopt, {});
  const std::vector<Tensor> in = make_random_inputs(g, 0);
  const std::vector<double> f = in[0].to_vector();
  const std::vector<double> i = in[1].to_vector();
  const std::vector<double> b = in[2].to_vector();
  const std::vector<double> h = {in[3].get_linear(0), in[3].get_linear(kBlock),
                                 in[3].get_linear(kBlock + 1)};
  // Printed on failure so an intended change can be pasted back.
  ::testing::Message got;
  got << std::hexfloat;
  for (double v : f) got << v << ", ";
  got << " | ";
  for (double v : i) got << static_cast<int64_t>(v) << ", ";
  got << " | ";
  for (double v : b) got << static_cast<int>(v) << ", ";
  got << " | ";
  for (double v : h) got << v << ", ";
  const std::vector<double> want_f = {0x1.9ec5f36cb75fp-3, 0x1.fb70fbc24ab2p-2,
                                      -0x1.9681ed8adb308p-1};
  const std::vector<double> want_i = {490832, 999999, -1000000};
  const std::vector<double> want_b = {1, 0, 0, 0, 1, 1, 1, 1};
  const std::vector<double> want_h = {-0x1.00cp-1, 0x1.114p-1, -0x1.17cp-1};
  EXPECT_EQ(f, want_f) << got;
  EXPECT_EQ(i, want_i) << got;
  EXPECT_EQ(b, want_b) << got;
  EXPECT_EQ(h, want_h) << got;
}

TEST(RandomInputs, IndexIsAPermutationWhenSizesMatch) {
  const Graph g = gather_mm(64, 32, 64);
  for (uint64_t seed : {0u, 1u, 2u}) {
    std::vector<int64_t> idx = ints(make_random_inputs(g, seed)[2]);
    std::vector<int64_t> sorted = idx;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> iota(64);
    std::iota(iota.begin(), iota.end(), 0);
    EXPECT_EQ(sorted, iota);
    EXPECT_NE(idx, iota);  // shuffled (1/64! chance of failing)
  }
}

TEST(RandomInputs, IndexRespectsTheIndexedDim) {
  const Graph g = gather_mm(40, 32, 500);
  const std::vector<int64_t> idx = ints(make_random_inputs(g, 9)[2]);
  const std::set<int64_t> distinct(idx.begin(), idx.end());
  EXPECT_EQ(*distinct.begin(), 0);
  EXPECT_EQ(*distinct.rbegin(), 39);
  EXPECT_EQ(distinct.size(), 40u);  // 500 draws from 40 values: all hit
}

TEST(RandomInputs, IndexThroughCastAndViewsAndSeveralUses) {
  Graph g;
  const ValueId x = g.parameter("x", DType::F32, {30, 8}, std::nullopt, {});
  const ValueId y = g.parameter("y", DType::F32, {8, 20}, std::nullopt, {});
  const ValueId idx = g.parameter("idx", DType::I32, {200}, std::nullopt, {});
  // x[idx.to(i64)[10:]] and y[:, idx]: the smaller size (20) wins.
  const ValueId i64 = g.cast(idx, DType::I64, {});
  g.add_output(g.index(x, 0, g.slice(i64, 0, 10, std::nullopt, 1, {}), {}));
  g.add_output(g.index(y, 1, idx, {}));
  const std::vector<int64_t> v = ints(make_random_inputs(g, 3)[2]);
  EXPECT_EQ(*std::min_element(v.begin(), v.end()), 0);
  EXPECT_EQ(*std::max_element(v.begin(), v.end()), 19);

  // Only a view of the parameter indexes: still found.
  Graph h;
  const ValueId a = h.parameter("a", DType::F32, {16, 4}, std::nullopt, {});
  const ValueId j = h.parameter("j", DType::I64, {4, 16}, std::nullopt, {});
  h.add_output(h.index(a, 0, h.select(j, 0, 1, {}), {}));
  for (int64_t e : ints(make_random_inputs(h, 4)[1])) {
    EXPECT_GE(e, 0);
    EXPECT_LT(e, 16);
  }
}

// x[idx[idx2]]: idx indexes x through a gather of itself, idx2 indexes idx.
TEST(RandomInputs, IndexThroughAGatherOfItself) {
  Graph g;
  const ValueId x = g.parameter("x", DType::F32, {64, 16}, std::nullopt, {});
  const ValueId idx = g.parameter("idx", DType::I64, {300}, std::nullopt, {});
  const ValueId idx2 = g.parameter("idx2", DType::I64, {32}, std::nullopt, {});
  g.add_output(g.index(x, 0, g.index(idx, 0, idx2, {}), {}));
  const std::vector<Tensor> in = make_random_inputs(g, 5);
  for (int64_t e : ints(in[1])) {
    EXPECT_GE(e, 0);
    EXPECT_LT(e, 64);
  }
  for (int64_t e : ints(in[2])) {
    EXPECT_GE(e, 0);
    EXPECT_LT(e, 300);
  }
}

TEST(RandomInputs, ExplicitRangesIncludingNegative) {
  Graph g;
  const ValueId x = g.parameter("x", DType::F32, {100, 4}, std::nullopt, {});
  const ValueId idx = g.parameter("idx", DType::I64, {1000}, IntRange{-100, 100}, {});
  g.parameter("small", DType::I8, {1000}, IntRange{-5, -2}, {});
  g.parameter("big", DType::I64, {1000}, IntRange{-(int64_t{1} << 62), int64_t{1} << 62}, {});
  g.add_output(g.index(x, 0, idx, {}));
  const std::vector<Tensor> in = make_random_inputs(g, 77);
  const std::vector<int64_t> v = ints(in[1]);  // the range wins over the indexed dim
  EXPECT_EQ(*std::min_element(v.begin(), v.end()), -100);
  EXPECT_EQ(*std::max_element(v.begin(), v.end()), 99);
  const std::vector<int64_t> s = ints(in[2]);
  EXPECT_EQ(std::set<int64_t>(s.begin(), s.end()), (std::set<int64_t>{-5, -4, -3}));
  // i64 values past 2^53 are drawn and stored exactly (read the raw words).
  std::vector<int64_t> big(1000);
  std::memcpy(big.data(), in[3].data_ptr(), big.size() * sizeof(int64_t));
  int past_2_53 = 0, odd = 0, negative = 0;
  for (int64_t e : big) {
    EXPECT_GE(e, -(int64_t{1} << 62));
    EXPECT_LT(e, int64_t{1} << 62);
    past_2_53 += (e > (int64_t{1} << 53) || e < -(int64_t{1} << 53));
    odd += (e & 1);
    negative += e < 0;
  }
  EXPECT_GT(past_2_53, 900);
  EXPECT_GT(odd, 400);  // low bits are random too, not lost to a double
  EXPECT_GT(negative, 400);
}

TEST(RandomInputs, OtherIntegersAndBool) {
  Graph g;
  g.parameter("a", DType::I32, {2000}, std::nullopt, {});
  g.parameter("b", DType::U8, {2000}, std::nullopt, {});
  g.parameter("c", DType::I8, {2000}, std::nullopt, {});
  g.parameter("d", DType::Bool, {2000}, std::nullopt, {});
  const std::vector<Tensor> in = make_random_inputs(g, 11);
  const std::vector<int64_t> a = ints(in[0]), b = ints(in[1]), c = ints(in[2]);
  EXPECT_EQ(*std::min_element(a.begin(), a.end()), -128);
  EXPECT_EQ(*std::max_element(a.begin(), a.end()), 127);
  EXPECT_EQ(*std::min_element(b.begin(), b.end()), 0);
  EXPECT_EQ(*std::max_element(b.begin(), b.end()), 127);
  EXPECT_EQ(*std::min_element(c.begin(), c.end()), -128);
  EXPECT_EQ(*std::max_element(c.begin(), c.end()), 127);
  const auto* d = reinterpret_cast<const uint8_t*>(in[3].data_ptr());
  int trues = 0;
  for (int i = 0; i < 2000; ++i) {
    EXPECT_LE(d[i], 1);
    trues += d[i];
  }
  EXPECT_GT(trues, 850);
  EXPECT_LT(trues, 1150);
}

TEST(RandomInputs, FloatsAreNonzeroInsideMinusOneOne) {
  for (DType dt : {DType::F16, DType::BF16, DType::F32, DType::F64, DType::F8E4M3, DType::F8E5M2}) {
    Graph g;
    g.parameter("x", dt, {4000}, std::nullopt, {});
    g.parameter("one", dt, {1}, std::nullopt, {});
    for (uint64_t seed : {0u, 1u, 2u}) {
      const std::vector<Tensor> in = make_random_inputs(g, seed);
      const std::vector<double> v = in[0].to_vector();
      double sum = 0, lo = 1, hi = -1;
      for (double e : v) {
        ASSERT_GE(e, -1.0) << dtype_name(dt);
        ASSERT_LT(e, 1.0) << dtype_name(dt);
        ASSERT_NE(e, 0.0) << dtype_name(dt);
        ASSERT_EQ(round_to(dt, e), e) << dtype_name(dt);
        sum += e;
        lo = std::min(lo, e);
        hi = std::max(hi, e);
      }
      EXPECT_LT(std::fabs(sum / 4000), 0.05) << dtype_name(dt);  // mean ~0
      EXPECT_LT(lo, -0.95) << dtype_name(dt);
      EXPECT_GE(hi, 0.875) << dtype_name(dt);  // f8e5m2: 0.875 is the largest below 1
      EXPECT_GT(std::set<double>(v.begin(), v.end()).size(), 10u) << dtype_name(dt);
      EXPECT_NE(in[1].get_linear(0), 0.0);
    }
  }
}

// Every kind of parameter, most of them several blocks long with a partial
// last block.
Graph every_kind(int64_t n) {
  Graph g;
  const ValueId x = g.parameter("x", DType::F32, {n, 2}, std::nullopt, {});
  g.parameter("h", DType::F16, {n + 7}, std::nullopt, {});
  g.parameter("bh", DType::BF16, {n + 1}, std::nullopt, {});
  g.parameter("f8", DType::F8E4M3, {n}, std::nullopt, {});
  g.parameter("f5", DType::F8E5M2, {n - 3}, std::nullopt, {});
  g.parameter("d", DType::F64, {n / 2 + 5}, std::nullopt, {});
  g.parameter("b", DType::Bool, {n + 33}, std::nullopt, {});
  g.parameter("r", DType::I32, {n + 11}, IntRange{-1000, 17}, {});
  g.parameter("u", DType::U8, {n}, std::nullopt, {});
  const ValueId perm = g.parameter("perm", DType::I64, {n}, std::nullopt, {});
  const ValueId idx = g.parameter("idx", DType::I32, {n + 5}, std::nullopt, {});
  g.add_output(g.index(x, 0, perm, {}));
  g.add_output(g.index(x, 0, idx, {}));
  return g;
}

TEST(RandomInputs, SameBytesWithAnyThreadCount) {
  const Graph g = every_kind(3 * kBlock + 1000);
  const std::vector<Tensor> one = make_random_inputs(g, 2024, 1);
  for (int threads : {0, 2, 3, 8, 64}) {
    const std::vector<Tensor> many = make_random_inputs(g, 2024, threads);
    ASSERT_EQ(many.size(), one.size());
    for (size_t i = 0; i < one.size(); ++i)
      EXPECT_TRUE(same_bytes(one[i], many[i])) << "threads " << threads << ", parameter " << i;
  }
  // The index without a range whose size matches is still a permutation.
  std::vector<int64_t> perm = ints(one[9]);
  std::sort(perm.begin(), perm.end());
  for (size_t i = 0; i < perm.size(); ++i) ASSERT_EQ(perm[i], static_cast<int64_t>(i));
}

// The blocks of one tensor draw from different streams, and a new seed gives
// new values in every block of every parameter.
TEST(RandomInputs, FreshValuesAcrossSeedsAndBlocks) {
  const Graph g = every_kind(2 * kBlock);
  const std::vector<Tensor> a = make_random_inputs(g, 7), b = make_random_inputs(g, 8);
  for (size_t i = 0; i < a.size(); ++i) {
    const int64_t es = dtype_size(a[i].dtype());
    for (int64_t blk = 0; blk * kBlock < a[i].numel(); ++blk) {
      const int64_t len = std::min(kBlock, a[i].numel() - blk * kBlock);
      const std::byte* pa = a[i].data_ptr() + blk * kBlock * es;
      const std::byte* pb = b[i].data_ptr() + blk * kBlock * es;
      EXPECT_NE(std::memcmp(pa, pb, static_cast<size_t>(len * es)), 0)
          << "parameter " << i << ", block " << blk;
      if (blk > 0 && len == kBlock) {
        EXPECT_NE(std::memcmp(pa, pa - kBlock * es, static_cast<size_t>(kBlock * es)), 0)
            << "parameter " << i << ", block " << blk << " repeats the one before";
      }
    }
  }
}

// Explicit ranges on every integer dtype, over several blocks: every value
// inside, both ends present, the middle well covered.
TEST(RandomInputs, RangesOnEveryIntegerDtype) {
  struct Case {
    DType dt;
    int64_t lo, hi;
  };
  const Case cases[] = {
      {DType::U8, 0, 256},          {DType::U8, 200, 203},
      {DType::I8, -128, 128},       {DType::I8, -7, -6},
      {DType::I32, -70000, -69990}, {DType::I32, std::numeric_limits<int32_t>::min(), 0},
      {DType::I64, -5, 5},          {DType::I64, std::numeric_limits<int64_t>::min(), -1},
  };
  Graph g;
  const char* names[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
  static_assert(std::size(names) == std::size(cases));
  for (size_t i = 0; i < std::size(cases); ++i)
    g.parameter(names[i], cases[i].dt, {2 * kBlock + 3}, IntRange{cases[i].lo, cases[i].hi}, {});
  for (int threads : {1, 0}) {
    const std::vector<Tensor> in = make_random_inputs(g, 31, threads);
    for (size_t i = 0; i < std::size(cases); ++i) {
      const Case& c = cases[i];
      int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
      int64_t below_mid = 0;
      const double mid = (static_cast<double>(c.lo) + static_cast<double>(c.hi)) / 2;
      for (int64_t k = 0; k < in[i].numel(); ++k) {
        // Read the raw element (i64 past 2^53 stays exact).
        int64_t v = 0;
        const std::byte* p = in[i].data_ptr() + k * dtype_size(c.dt);
        switch (c.dt) {
          case DType::U8:
            v = *reinterpret_cast<const uint8_t*>(p);
            break;
          case DType::I8:
            v = *reinterpret_cast<const int8_t*>(p);
            break;
          case DType::I32: {
            int32_t x;
            std::memcpy(&x, p, 4);
            v = x;
            break;
          }
          default:
            std::memcpy(&v, p, 8);
            break;
        }
        ASSERT_GE(v, c.lo) << dtype_name(c.dt);
        ASSERT_LT(v, c.hi) << dtype_name(c.dt);
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        below_mid += static_cast<double>(v) < mid;
      }
      EXPECT_EQ(lo, c.lo) << dtype_name(c.dt) << " case " << i;
      EXPECT_EQ(hi, c.hi - 1) << dtype_name(c.dt) << " case " << i;
      // Uniform: ceil(w/2) of the w values lie below the middle.
      const double w = static_cast<double>(c.hi) - static_cast<double>(c.lo);
      EXPECT_NEAR(static_cast<double>(below_mid) / static_cast<double>(in[i].numel()),
                  std::ceil(w / 2) / w, 0.01)
          << dtype_name(c.dt) << " case " << i;
    }
  }
}

// The float elements are rounded and encoded with integer arithmetic
// (detail::random_float_bits), not round_to and store_element; both must give
// the same bits on every grid point: random ones at every scale, and the
// ties, near-ties and binade edges of every format. Zero and what rounds to
// 0 or 1 are redrawn.
TEST(RandomInputs, FloatBitsMatchStoreElement) {
  constexpr int64_t top = int64_t{1} << 52;
  std::vector<int64_t> ks = {1, -1, top, -top, top - 1, 1 - top};
  for (int j = 0; j <= 52; ++j)
    for (int64_t m : {1, 2, 3, 5, 7, 9, 11, 13, 17, 1023, 1025, 2047, 2049, 4095})
      for (int64_t d : {-2, -1, 0, 1, 2}) {
        const int64_t k = (m << j) / 2 + d;  // m odd: a tie at some precision
        if (k > 0 && k <= top) {
          ks.push_back(k);
          ks.push_back(-k);
        }
      }
  uint64_t z = 12345;
  for (int i = 0; i < 200000; ++i) {
    z = z * 6364136223846793005ULL + 1442695040888963407ULL;
    // Every magnitude scale: a 52-bit draw shifted right by 0 .. 52 bits.
    const auto k = static_cast<int64_t>((z >> 12) >> ((z >> 3) % 53));
    if (k != 0) ks.push_back((z & 4) ? k : -k);
  }
  for (DType dt : {DType::F16, DType::BF16, DType::F32, DType::F64, DType::F8E4M3, DType::F8E5M2}) {
    EXPECT_EQ(detail::random_float_bits(dt, 0), ~uint64_t{0}) << dtype_name(dt);
    int redrawn = 0;
    for (int64_t k : ks) {
      const double v = round_to(dt, static_cast<double>(k) * 0x1p-52);
      uint64_t want = 0;
      store_element(dt, &want, v);  // little-endian: the low bytes
      const uint64_t got = detail::random_float_bits(dt, k);
      if (v == 0 || v >= 1) {
        ASSERT_EQ(got, ~uint64_t{0}) << dtype_name(dt) << " k=" << k;
        ++redrawn;
      } else {
        ASSERT_EQ(got, want) << dtype_name(dt) << " k=" << k << " v=" << v;
      }
    }
    EXPECT_GT(redrawn, 0) << dtype_name(dt);  // both cases were tried
  }
}

// Floats over several blocks: nonzero, inside [-1, 1), representable, mean ~0.
TEST(RandomInputs, FloatsOverSeveralBlocks) {
  for (DType dt : {DType::F16, DType::BF16, DType::F32, DType::F64, DType::F8E4M3, DType::F8E5M2}) {
    Graph g;
    g.parameter("x", dt, {3 * kBlock + 17}, std::nullopt, {});
    const std::vector<double> v = make_random_inputs(g, 99)[0].to_vector();
    double sum = 0;
    int64_t negative = 0;
    for (double e : v) {
      ASSERT_GE(e, -1.0) << dtype_name(dt);
      ASSERT_LT(e, 1.0) << dtype_name(dt);
      ASSERT_NE(e, 0.0) << dtype_name(dt);
      ASSERT_EQ(round_to(dt, e), e) << dtype_name(dt);
      sum += e;
      negative += e < 0;
    }
    // A draw that rounds up to 1 is redrawn while -1 is kept, so the mean
    // leans negative by about the share of [-1, 1) that rounds to 1: 1/32
    // for f8e5m2 (2 mantissa bits), 1/64 for f8e4m3, 2^-12 for f16.
    const auto n = static_cast<double>(v.size());
    const double lean = std::ldexp(1.0, -dtype_bits_of_mantissa(dt) - 3);
    EXPECT_NEAR(sum / n, -lean, 0.006) << dtype_name(dt);
    EXPECT_NEAR(static_cast<double>(negative) / n, 0.5 + lean / 2, 0.006) << dtype_name(dt);
  }
}

TEST(RandomInputs, AddingAParameterKeepsTheOthers) {
  Graph g1;
  g1.parameter("a", DType::F32, {5, 5}, std::nullopt, {});
  g1.parameter("b", DType::I32, {7}, IntRange{0, 1000}, {});
  Graph g2;
  g2.parameter("a", DType::F32, {5, 5}, std::nullopt, {});
  g2.parameter("b", DType::I32, {7}, IntRange{0, 1000}, {});
  g2.parameter("c", DType::F16, {3}, std::nullopt, {});
  const std::vector<Tensor> in1 = make_random_inputs(g1, 42), in2 = make_random_inputs(g2, 42);
  EXPECT_TRUE(same_bytes(in1[0], in2[0]));
  EXPECT_TRUE(same_bytes(in1[1], in2[1]));
}

TEST(RandomInputs, EmptyAndZeroDim) {
  Graph g;
  const ValueId x = g.parameter("x", DType::F32, {0, 4}, std::nullopt, {});
  const ValueId idx = g.parameter("idx", DType::I64, {0}, std::nullopt, {});
  g.parameter("s", DType::F16, {}, std::nullopt, {});
  g.parameter("e", DType::I64, {0}, std::nullopt, {});
  g.add_output(g.index(x, 0, idx, {}));
  const std::vector<Tensor> in = make_random_inputs(g, 1);
  EXPECT_EQ(in[0].numel(), 0);
  EXPECT_EQ(in[1].numel(), 0);  // an empty index into an empty dim draws nothing
  EXPECT_EQ(in[2].dim(), 0);
  EXPECT_NE(in[2].get({}), 0.0);
  EXPECT_EQ(in[3].numel(), 0);
}

// The message make_random_inputs throws for `g` (a test failure when none).
std::string draw_error(const Graph& g, SourceLoc* loc = nullptr) {
  try {
    make_random_inputs(g, 1);
  } catch (const UserError& e) {
    if (loc) *loc = e.loc();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

// An index without a range into a dim of size 0: no index value is valid, so
// none can be drawn. The error names the parameter and the indexed dim (it
// used to draw zeros, which the run then reported as an out-of-bounds index,
// blaming the program).
TEST(RandomInputs, IndexIntoAnEmptyDimIsAnErrorNamingBoth) {
  Graph g;
  const ValueId x = g.parameter("x", DType::F32, {0, 4}, std::nullopt, {});
  const ValueId idx = g.parameter("idx", DType::I64, {3}, std::nullopt, SourceLoc{1, 20, 3});
  g.add_output(g.index(x, 0, idx, {}));
  SourceLoc loc;
  const std::string message = draw_error(g, &loc);
  EXPECT_EQ(message,
            "cannot draw a random index for parameter `idx`: it indexes dim 0 of `x` (f32[0, 4]), "
            "whose size is 0, so no index value is valid (give `idx` as an input, or that dim a "
            "size above 0)");
  EXPECT_EQ(loc.line, 1);  // at the parameter
  EXPECT_EQ(loc.col, 20);
}

// `i: i64[4] in [0, T)` at T = 0: the range is empty, said at the parameter.
TEST(RandomInputs, EmptySymbolicRangeIsAnErrorAtTheParameter) {
  Graph g;
  const SymbolId t = g.add_symbol("T", 0, {});
  IntRange r;
  r.lo = 0, r.hi = 0, r.hi_symbol = t;
  const ValueId i = g.parameter("i", DType::I64, {4}, r, SourceLoc{2, 7, 1});
  g.add_output(i);
  SourceLoc loc;
  EXPECT_EQ(draw_error(g, &loc),
            "parameter `i`: its range is [0, 0) at these sizes, so no random value can be drawn");
  EXPECT_EQ(loc.line, 2);
  EXPECT_EQ(loc.col, 7);
}

// `i: i8[4] in [T, 1000)` at T = 500: the range is not empty, but no i8
// value lies in it (a fixed range is checked to fit the dtype when the
// program compiles; a symbolic one only when its sizes are given). The
// message must say so, not call [500, 1000) empty.
TEST(RandomInputs, SymbolicRangeOutsideTheDtypeSaysSo) {
  for (auto [dt, lo, hi, holds] :
       {std::tuple{DType::I8, int64_t{500}, int64_t{1000}, "[-128, 127]"},
        std::tuple{DType::U8, int64_t{-5}, int64_t{0}, "[0, 255]"},
        std::tuple{DType::I32, int64_t{2500000000}, int64_t{3000000000}, "[-2147483648, 2147483647]"}}) {
    Graph g;
    const SymbolId t = g.add_symbol("T", lo < 0 ? -lo : lo, {});
    IntRange r;
    r.lo = lo, r.hi = hi;
    r.lo_symbol = t, r.lo_negated = lo < 0;  // [T, ...) or [-T, ...)
    const ValueId i = g.parameter("i", dt, {4}, r, SourceLoc{2, 7, 1});
    g.add_output(i);
    SourceLoc loc;
    EXPECT_EQ(draw_error(g, &loc),
              "parameter `i`: its range is [" + std::to_string(lo) + ", " + std::to_string(hi) +
                  ") at these sizes, which holds no " + std::string(dtype_name(dt)) + " value (" +
                  std::string(dtype_name(dt)) + " holds " + holds +
                  "), so no random value can be drawn")
        << dtype_name(dt);
    EXPECT_EQ(loc.line, 2);
    EXPECT_EQ(loc.col, 7);
  }
}

TEST(RandomInputs, IndexIntoAnEmptySymbolicDimNamesTheSymbol) {
  // def f(x: f16[T, 64], i: i64[M]): return x[:, :][i] at T = 0, M = 5,
  // the indexed value a view of x named `v`.
  Graph g;
  const SymbolId t = g.add_symbol("T", 0, {});
  const SymbolId m = g.add_symbol("M", 5, {});
  const ValueId x = g.parameter("x", DType::F16, {0, 64}, std::nullopt, {}, {t, kFixedDim});
  const ValueId i = g.parameter("i", DType::I64, {5}, std::nullopt, {}, {m});
  const ValueId v = g.transpose(g.transpose(x, 0, 1, {}), 0, 1, {});
  g.set_name(v, "v");
  g.add_output(g.index(v, 0, i, {}));
  EXPECT_NE(draw_error(g).find("parameter `i`: it indexes dim 0 of `v` (f16[T, 64] with T = 0), "
                               "whose size is 0"),
            std::string::npos)
      << draw_error(g);
}

TEST(RandomInputs, GivenParametersAreNeitherDrawnNorChecked) {
  Graph g;
  const ValueId x = g.parameter("x", DType::F32, {0, 4}, std::nullopt, {});
  const ValueId idx = g.parameter("idx", DType::I64, {3}, std::nullopt, {});
  g.parameter("w", DType::F32, {6}, std::nullopt, {});
  g.add_output(g.index(x, 0, idx, {}));
  // idx given by the caller: no error, its tensor left for the caller, and
  // the others are what they are without it.
  const std::vector<Tensor> in = make_random_inputs(g, 7, 0, {false, true});
  ASSERT_EQ(in.size(), 3u);
  EXPECT_FALSE(in[1].defined());
  EXPECT_EQ(in[0].numel(), 0);
  Graph g2;
  g2.parameter("x", DType::F32, {0, 4}, std::nullopt, {});
  g2.parameter("idx", DType::I64, {3}, IntRange{0, 1}, {});
  g2.parameter("w", DType::F32, {6}, std::nullopt, {});
  EXPECT_TRUE(same_bytes(in[2], make_random_inputs(g2, 7)[2]));
}

}  // namespace
}  // namespace tilefuse
