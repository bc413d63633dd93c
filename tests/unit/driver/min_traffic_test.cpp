// driver::min_traffic_bytes: the bytes a program must move at least (issue
// 12, item 4), each expected value computed by hand from the program's
// shapes: gathered rows once each, other inputs once, outputs once.
#include <gtest/gtest.h>

#include <pthread.h>

#include <fstream>
#include <sstream>

#include "driver/bench.h"
#include "frontend/frontend.h"

namespace tilefuse {
namespace {

double bytes_of(const std::string& source) {
  return driver::min_traffic_bytes(parse_program(source, "test.tfs").graph);
}

std::string read_bench_program(const std::string& name) {
  std::ifstream in(std::string(TILEFUSE_SOURCE_DIR) + "/bench/programs/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(MinTraffic, PointcloudCountsEveryGatheredRowOnceEvenPastTheTable) {
  // 2^20 rows of 96 f16 gathered from a table of 2^18 rows (each row about
  // four times), the i64 index, the 96x128 weights, the 2^20x128 f16 output.
  const double rows = 1048576.0 * 96 * 2, index = 1048576.0 * 8, weights = 96.0 * 128 * 2,
               out = 1048576.0 * 128 * 2;
  EXPECT_EQ(rows + index + weights + out, 478175232.0);
  EXPECT_EQ(bytes_of(read_bench_program("pointcloud_gather_f16.tfs")), 478175232.0);
}

TEST(MinTraffic, DecodeIsTheWeights) {
  // 32 gathered rows of 4096 f16, 32 i64 indices, 4096x11008 f16 weights,
  // a 32x11008 f16 output.
  EXPECT_EQ(bytes_of(read_bench_program("decode_m32_f16.tfs")),
            32.0 * 4096 * 2 + 32 * 8 + 4096.0 * 11008 * 2 + 32.0 * 11008 * 2);
  EXPECT_EQ(bytes_of(read_bench_program("decode_m32_f16.tfs")), 91144448.0);
}

TEST(MinTraffic, PlainGemmReadsEachInputOnce) {
  EXPECT_EQ(bytes_of("def f(x: f32[64, 32], w: f32[32, 16]):\n"
                     "    return x @ w\n"),
            64 * 32 * 4 + 32 * 16 * 4 + 64 * 16 * 4);  // 14336
}

TEST(MinTraffic, AnInputAlsoReadWholeCountsOnce) {
  // x is gathered and also multiplied whole: x once (100x8 f16), not its 300
  // gathered rows; idx, w, both outputs.
  EXPECT_EQ(bytes_of("def f(x: f16[100, 8], idx: i64[300] in [0, 100), w: f16[8, 4]):\n"
                     "    return x[idx] @ w, x @ w\n"),
            100 * 8 * 2 + 300 * 8 + 8 * 4 * 2 + 300 * 4 * 2 + 100 * 4 * 2);  // 7264
}

TEST(MinTraffic, GatherAlongAnInnerDimOfABatch) {
  // x[:, idx] reads 4x96 rows of 64 f16; i64 idx; w 4x64x80 f16; out 4x96x80 f16.
  EXPECT_EQ(bytes_of("def f(x: f16[4, 128, 64], idx: i64[96] in [0, 128), w: f16[4, 64, 80]):\n"
                     "    return torch.bmm(x[:, idx], w)\n"),
            4 * 96 * 64 * 2 + 96 * 8 + 4 * 64 * 80 * 2 + 4 * 96 * 80 * 2);  // 152320
}

TEST(MinTraffic, GatherThroughAViewAndOfTheWeights) {
  // x.T[idx]: 50 gathered columns of x, 8 f16 each. w[idx]: 8 of w's 64 rows
  // of 4 f16, by i32 indices.
  EXPECT_EQ(bytes_of("def f(x: f16[8, 100], idx: i64[50] in [0, 100), w: f16[8, 4]):\n"
                     "    return x.T[idx] @ w\n"),
            50 * 8 * 2 + 50 * 8 + 8 * 4 * 2 + 50 * 4 * 2);  // 1664
  EXPECT_EQ(bytes_of("def f(x: f16[16, 8], w: f16[64, 4], idx: i32[8] in [0, 64)):\n"
                     "    return x @ w[idx]\n"),
            16 * 8 * 2 + 8 * 4 * 2 + 8 * 4 + 16 * 4 * 2);  // 480
}

// A gather behind 20,000 views (`.T` after `.T`): the walk to the Index is a
// loop, not a recursion a view deep. It segfaulted `bench` at ~70,000 views
// on the default 8 MiB stack; here it runs on a 256 KiB one.
TEST(MinTraffic, AGatherBehindALongChainOfViews) {
  std::string source =
      "def f(x: f16[8, 100], idx: i64[50] in [0, 100), w: f16[8, 4]):\n    y0 = x.T\n";
  constexpr int kViews = 20000;
  for (int i = 0; i < kViews; ++i)
    source += "    y" + std::to_string(i + 1) + " = y" + std::to_string(i) + ".T\n";
  source += "    return y" + std::to_string(kViews) + "[idx] @ w\n";
  const Graph graph = parse_program(source, "test.tfs").graph;
  struct Job {
    const Graph* graph;
    double bytes = -1;
  } job{&graph};
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, 256 * 1024), 0);
  pthread_t thread;
  ASSERT_EQ(pthread_create(
                &thread, &attr,
                [](void* p) -> void* {
                  auto* j = static_cast<Job*>(p);
                  j->bytes = driver::min_traffic_bytes(*j->graph);
                  return nullptr;
                },
                &job),
            0);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
  pthread_attr_destroy(&attr);
  // As x.T[idx] @ w: 50 gathered columns of 8 f16, the index, w, the output.
  EXPECT_EQ(job.bytes, 50 * 8 * 2 + 50 * 8 + 8 * 4 * 2 + 50 * 4 * 2);  // 1664
}

TEST(MinTraffic, AnInputReturnedAsIsIsReadAndWritten) {
  EXPECT_EQ(bytes_of("def f(x: f32[4, 4]):\n"
                     "    return x\n"),
            2 * 4 * 4 * 4);
}

}  // namespace
}  // namespace tilefuse
