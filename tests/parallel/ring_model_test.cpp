// The ring's α-β model (parallel/ring_model.h): the fit recovers a known α and B from the times
// they predict, stays sensible on noise, and the per-step means come from the ring's spans.
#include "parallel/ring_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/support/fixtures.h"

namespace rg::parallel {
namespace {
using rg::testing::throws_error;

TEST(RingModel, FitRecoversAlphaAndBandwidth) {
  for (int n : {2, 3, 4}) {
    const RingModel truth{n, 20e-6, 3e9};
    std::vector<double> bytes, seconds;
    for (double s = 4096; s <= 256.0 * (1 << 20); s *= 4) {
      bytes.push_back(s);
      seconds.push_back(truth.seconds(s));
    }
    const RingModel fit = fit_ring_model(n, bytes, seconds);
    EXPECT_NEAR(fit.alpha_seconds, 20e-6, 1e-12) << n << " ranks";
    EXPECT_NEAR(fit.bytes_per_second / 3e9, 1.0, 1e-9) << n << " ranks";
    // The terms: 2(N−1) steps of α, and 2(N−1)/N of the bytes at B.
    EXPECT_DOUBLE_EQ(fit.latency_seconds(), 2.0 * (n - 1) * fit.alpha_seconds);
    EXPECT_NEAR(fit.step_seconds(1 << 20), 20e-6 + (1 << 20) / double(n) / 3e9, 1e-12);
  }
}

TEST(RingModel, RelativeErrorsWeighEverySize) {
  // 10 % too slow at the smallest size only: an absolute fit would ignore it, a relative one
  // moves α up by a visible amount and B hardly.
  const RingModel truth{2, 10e-6, 2e9};
  std::vector<double> bytes{4096, 65536, 1 << 20, 16 << 20}, seconds;
  for (double s : bytes) seconds.push_back(truth.seconds(s));
  seconds[0] *= 1.1;
  const RingModel fit = fit_ring_model(2, bytes, seconds);
  EXPECT_GT(fit.alpha_seconds, truth.alpha_seconds);
  EXPECT_NEAR(fit.bytes_per_second / truth.bytes_per_second, 1.0, 0.05);
}

TEST(RingModel, NoiseThatWouldMakeAlphaNegativeIsClamped) {
  // Times growing faster than linearly at small sizes: the unconstrained line crosses below 0.
  const RingModel fit = fit_ring_model(2, {1e3, 1e6, 1e7}, {1e-7, 1e-3, 1e-2});
  EXPECT_GE(fit.alpha_seconds, 0);
  EXPECT_GT(fit.bytes_per_second, 0);
}

TEST(RingModel, BadInputIsNamed) {
  EXPECT_TRUE(throws_error([] { fit_ring_model(1, {1, 2}, {1, 2}); }, {"2 ranks or more"}));
  EXPECT_TRUE(throws_error([] { fit_ring_model(2, {1}, {1}); }, {"two sizes"}));
  EXPECT_TRUE(throws_error([] { fit_ring_model(2, {1, 1}, {1, 1}); }, {"two distinct sizes"}));
  EXPECT_TRUE(throws_error([] { fit_ring_model(2, {1, 2}, {1, 0}); }, {"bad point"}));
}

TEST(RingModel, MeanStepTimesFromTheRingSpans) {
  trace::Recorded r;
  auto span = [](const char* cat, std::string name, int64_t ns) {
    trace::Event e;
    e.category = cat;
    e.name = std::move(name);
    e.duration_ns = ns;
    return e;
  };
  r.events = {span("ring", "reduce-scatter step 1/2", 1000),
              span("ring", "allgather step 2/2", 3000),
              span("ring", "reduce-scatter step 1/2", 3000), span("collective", "allreduce #1", 9)};
  const std::map<int, double> mean = mean_ring_step_seconds(r);
  ASSERT_EQ(mean.size(), 2u);
  EXPECT_DOUBLE_EQ(mean.at(1), 2e-6);
  EXPECT_DOUBLE_EQ(mean.at(2), 3e-6);
}

}  // namespace
}  // namespace rg::parallel
