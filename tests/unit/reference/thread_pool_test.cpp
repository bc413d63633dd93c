#include "reference/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace tilefuse::reference {
namespace {

TEST(ThreadPool, CoversTheRangeExactlyOnce) {
  for (int threads : {1, 2, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 7, 1000, 100003}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, 13, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) hits[i].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << n << " " << i;
    }
  }
}

TEST(ThreadPool, RethrowsAndStaysUsable) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(1000, 1,
                                 [](int64_t lo, int64_t) {
                                   if (lo >= 500) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(100, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(ThreadPool, NestedLoopsRunInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> count{0};
  pool.parallel_for(8, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      pool.parallel_for(100, 1, [&](int64_t a, int64_t b) { count += b - a; });
  });
  EXPECT_EQ(count.load(), 800);
}

// A job asks only as many workers as it has chunks to join: many small jobs
// back to back on a large pool (workers woken for one job arriving during
// the next, a worker woken with no slot left) still cover every range
// exactly once, and an exception leaves the pool usable.
TEST(ThreadPool, SmallJobsOnALargePool) {
  for (int threads : {4, 64}) {
    ThreadPool pool(threads);
    for (int job = 0; job < 3000; ++job) {
      const int64_t n = std::vector<int64_t>{1, 2, 3, 5, 64, 1000}[static_cast<size_t>(job % 6)];
      std::atomic<int64_t> sum{0}, calls{0};
      pool.parallel_for(n, 1, [&](int64_t lo, int64_t hi) {
        calls += 1;
        for (int64_t i = lo; i < hi; ++i) sum += i + 1;
      });
      ASSERT_EQ(sum.load(), n * (n + 1) / 2) << threads << " " << job;
      ASSERT_LE(calls.load(), n);
      if (job % 500 == 7)
        EXPECT_THROW(pool.parallel_for(3, 1, [](int64_t, int64_t) { throw std::runtime_error("x"); }),
                     std::runtime_error);
    }
  }
}

}  // namespace
}  // namespace tilefuse::reference
