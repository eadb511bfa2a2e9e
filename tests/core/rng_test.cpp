#include "core/rng.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {

TEST(Philox, MatchesRandom123KnownAnswers) {
  Philox4 r = philox4x32_10(0, 0, 0);
  EXPECT_EQ(r.v[0], 0x6627e8d5u);
  EXPECT_EQ(r.v[1], 0xe169c58du);
  EXPECT_EQ(r.v[2], 0xbc57ac4cu);
  EXPECT_EQ(r.v[3], 0x9b00dbd8u);
  r = philox4x32_10(~0ull, ~0ull, ~0ull);
  EXPECT_EQ(r.v[0], 0x408f276du);
  EXPECT_EQ(r.v[1], 0x41c83b0eu);
  EXPECT_EQ(r.v[2], 0xa20bc7c6u);
  EXPECT_EQ(r.v[3], 0x6d5451fdu);
  r = philox4x32_10(0x85a308d3243f6a88ull, 0x0370734413198a2eull, 0x299f31d0a4093822ull);
  EXPECT_EQ(r.v[0], 0xd16cfe09u);
  EXPECT_EQ(r.v[1], 0x94fdccebu);
  EXPECT_EQ(r.v[2], 0x5001e420u);
  EXPECT_EQ(r.v[3], 0x24126ea1u);
}

TEST(Random, SeededAndIndependentOfThreadCount) {
  const int threads = num_threads();
  manual_seed(42);
  set_num_threads(1);
  const std::vector<float> a = randn({100000}).to_vector<float>();
  manual_seed(42);
  set_num_threads(2);
  const std::vector<float> b = randn({100000}).to_vector<float>();
  set_num_threads(threads);
  EXPECT_EQ(a, b);
  const std::vector<float> c = randn({100000}).to_vector<float>();  // next draw differs
  EXPECT_NE(a, c);
}

TEST(Random, DistributionsLookRight) {
  manual_seed(7);
  const std::vector<double> u = rand({200000}, {DType::f64}).to_vector<double>();
  const std::vector<double> n = randn({200000}, {DType::f64}).to_vector<double>();
  double su = 0, sn = 0, sn2 = 0, lo = 1, hi = 0;
  for (double v : u) su += v, lo = std::min(lo, v), hi = std::max(hi, v);
  for (double v : n) sn += v, sn2 += v * v;
  EXPECT_NEAR(su / u.size(), 0.5, 0.005);
  EXPECT_GE(lo, 0.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_NEAR(sn / n.size(), 0.0, 0.01);
  EXPECT_NEAR(sn2 / n.size(), 1.0, 0.01);
  EXPECT_TRUE(testing::throws_error([] { rand({2}, {DType::i64}); }, {"rand", "floating"}));
}

TEST(ThreadPool, CoversRangeOnceAndPropagatesErrors) {
  std::vector<int> hits(1000, 0);
  parallel_for(1000, 10, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++hits[i];
  });
  for (int h : hits) EXPECT_EQ(h, 1);
  EXPECT_THROW(parallel_for(1000, 1,
                            [](int64_t b, int64_t) {
                              if (b == 0) fail("boom");
                            }),
               Error);
  // Nested calls run serially instead of deadlocking.
  std::atomic<int> total{0};
  parallel_for(4, 1, [&](int64_t b, int64_t e) {
    parallel_for(10, 1,
                 [&](int64_t b2, int64_t e2) { total += static_cast<int>((e - b) * (e2 - b2)); });
  });
  EXPECT_EQ(total.load(), 40);
  EXPECT_TRUE(testing::throws_error([] { set_num_threads(0); }, {"set_num_threads", "0"}));
}

}  // namespace
}  // namespace rg
