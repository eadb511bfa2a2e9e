#include "parallel/ring_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "core/error.h"

namespace rg::parallel {

double RingModel::latency_seconds() const {
  return 2.0 * (ranks - 1) * alpha_seconds;
}

double RingModel::bandwidth_seconds(double bytes) const {
  return bytes_per_second > 0 ? 2.0 * (ranks - 1) / ranks * bytes / bytes_per_second : 0;
}

double RingModel::step_seconds(double bytes) const {
  return alpha_seconds + (bytes_per_second > 0 ? bytes / ranks / bytes_per_second : 0);
}

RingModel fit_ring_model(int ranks, const std::vector<double>& bytes,
                         const std::vector<double>& seconds) {
  RG_CHECK(ranks >= 2, "fit_ring_model: the ring needs 2 ranks or more, got ", ranks);
  RG_CHECK(bytes.size() == seconds.size() && bytes.size() >= 2,
           "fit_ring_model: needs two sizes or more with a time each");
  // T = a·x + b·y with x = 2(N−1) (a = α) and y = 2(N−1)/N · S (b = 1/B); weights w = 1/T².
  const double x = 2.0 * (ranks - 1);
  double sxx = 0, sxy = 0, syy = 0, sxt = 0, syt = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    RG_CHECK(seconds[i] > 0 && bytes[i] >= 0, "fit_ring_model: bad point (", bytes[i], " bytes, ",
             seconds[i], " s)");
    const double y = 2.0 * (ranks - 1) / ranks * bytes[i], t = seconds[i];
    const double w = 1.0 / (t * t);
    sxx += w * x * x, sxy += w * x * y, syy += w * y * y, sxt += w * x * t, syt += w * y * t;
  }
  const double det = sxx * syy - sxy * sxy;
  RG_CHECK(det > 0, "fit_ring_model: needs two distinct sizes");
  double a = (syy * sxt - sxy * syt) / det;
  double b = (sxx * syt - sxy * sxt) / det;
  if (a < 0) a = 0, b = syt / syy;   // the best line through the origin
  if (b <= 0) b = 0, a = sxt / sxx;  // the best constant
  return {ranks, a, b > 0 ? 1.0 / b : std::numeric_limits<double>::infinity()};
}

std::map<int, double> mean_ring_step_seconds(const trace::Recorded& recorded) {
  std::map<int, std::pair<double, int>> sums;
  for (const trace::Event& e : recorded.events) {
    if (std::string_view(e.category) != "ring" || e.phase != trace::Phase::complete) continue;
    // "reduce-scatter step 3/6", "allgather step 5/6"
    const auto at = e.name.find(" step ");
    if (at == std::string::npos) continue;
    const int step = std::atoi(e.name.c_str() + at + 6);
    sums[step].first += static_cast<double>(e.duration_ns) * 1e-9;
    ++sums[step].second;
  }
  std::map<int, double> mean;
  for (const auto& [step, s] : sums) mean[step] = s.first / s.second;
  return mean;
}

}  // namespace rg::parallel
