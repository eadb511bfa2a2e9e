#include "nn/segmentation_metrics.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace rg::nn {

SegmentationCounts::SegmentationCounts(int64_t num_classes) {
  RG_CHECK(num_classes >= 1, "SegmentationCounts: num_classes must be positive, got ", num_classes);
  const auto n = static_cast<std::size_t>(num_classes);
  intersection.assign(n, 0);
  predicted.assign(n, 0);
  target.assign(n, 0);
}

SegmentationCounts& SegmentationCounts::operator+=(const SegmentationCounts& other) {
  if (num_classes() == 0) return *this = other;
  RG_CHECK(other.num_classes() == num_classes(), "SegmentationCounts: cannot add counts of ",
           other.num_classes(), " classes to counts of ", num_classes());
  for (std::size_t c = 0; c < intersection.size(); ++c) {
    intersection[c] += other.intersection[c];
    predicted[c] += other.predicted[c];
    target[c] += other.target[c];
  }
  return *this;
}

bool SegmentationCounts::empty(int64_t c) const {
  RG_CHECK(c >= 0 && c < num_classes(), "SegmentationCounts: class ", c, " outside [0, ",
           num_classes(), ")");
  const auto i = static_cast<std::size_t>(c);
  return predicted[i] == 0 && target[i] == 0;
}

double SegmentationCounts::dice(int64_t c) const {
  if (empty(c)) return 1.0;
  const auto i = static_cast<std::size_t>(c);
  return 2.0 * static_cast<double>(intersection[i]) / static_cast<double>(predicted[i] + target[i]);
}

double SegmentationCounts::iou(int64_t c) const {
  if (empty(c)) return 1.0;
  const auto i = static_cast<std::size_t>(c);
  return static_cast<double>(intersection[i]) /
         static_cast<double>(predicted[i] + target[i] - intersection[i]);
}

double SegmentationCounts::mean_dice() const {
  RG_CHECK(num_classes() > 0, "SegmentationCounts: no classes counted");
  double s = 0;
  for (int64_t c = 0; c < num_classes(); ++c) s += dice(c);
  return s / static_cast<double>(num_classes());
}

double SegmentationCounts::mean_iou() const {
  RG_CHECK(num_classes() > 0, "SegmentationCounts: no classes counted");
  double s = 0;
  for (int64_t c = 0; c < num_classes(); ++c) s += iou(c);
  return s / static_cast<double>(num_classes());
}

Tensor predict_binary(const Tensor& logits, double threshold) {
  RG_CHECK(logits.defined() && is_floating(logits.dtype()) && logits.dim() >= 1,
           "predict_binary: expected floating logits (N, *), got ",
           logits.defined() ? logits.describe() : std::string("undefined"));
  RG_CHECK(threshold > 0 && threshold < 1, "predict_binary: threshold must be in (0, 1), got ",
           threshold);
  const std::vector<double> x = logits.to_vector<double>();
  Tensor out = empty(logits.shape(), {DType::u8});
  uint8_t* p = out.data<uint8_t>();
  for (std::size_t i = 0; i < x.size(); ++i) p[i] = 1.0 / (1.0 + std::exp(-x[i])) > threshold;
  return out;
}

Tensor predict_multiclass(const Tensor& logits) {
  RG_CHECK(logits.defined() && is_floating(logits.dtype()) && logits.dim() >= 2 &&
               logits.size(1) >= 1 && logits.size(1) <= 256,
           "predict_multiclass: expected floating logits (N, C, *) with C in [1, 256], got ",
           logits.defined() ? logits.describe() : std::string("undefined"));
  Shape shape = logits.shape();
  shape.erase(shape.begin() + 1);
  const int64_t N = logits.size(0), C = logits.size(1),
                S = numel_of(shape) / std::max<int64_t>(N, 1);
  const std::vector<double> x = logits.to_vector<double>();  // (N, C, S)
  Tensor out = empty(shape, {DType::u8});
  uint8_t* p = out.data<uint8_t>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = 0; s < S; ++s) {
      const double* lane = x.data() + n * C * S + s;
      int64_t best = 0;
      for (int64_t c = 1; c < C; ++c)
        if (lane[c * S] > lane[best * S]) best = c;
      p[n * S + s] = static_cast<uint8_t>(best);
    }
  return out;
}

SegmentationCounts count_binary(const Tensor& logits, const Tensor& target, double threshold) {
  RG_CHECK(logits.defined() && target.defined() && is_floating(logits.dtype()) &&
               is_floating(target.dtype()) && logits.dim() >= 1 && logits.shape() == target.shape(),
           "count_binary: expected floating logits and target of one shape (N, *), got ",
           logits.defined() ? logits.describe() : std::string("undefined"), " and ",
           target.defined() ? target.describe() : std::string("undefined"));
  RG_CHECK(threshold > 0 && threshold < 1, "count_binary: threshold must be in (0, 1), got ",
           threshold);
  const Tensor predicted = predict_binary(logits, threshold);
  const uint8_t* p = predicted.data<uint8_t>();
  const std::vector<double> t = target.to_vector<double>();
  SegmentationCounts counts(1);
  for (std::size_t i = 0; i < t.size(); ++i) {
    const bool y = t[i] > 0.5;
    counts.intersection[0] += p[i] && y;
    counts.predicted[0] += p[i];
    counts.target[0] += y;
  }
  return counts;
}

SegmentationCounts count_multiclass(const Tensor& logits, const Tensor& target) {
  RG_CHECK(logits.defined() && target.defined() && is_floating(logits.dtype()) &&
               logits.dim() >= 2 && logits.size(1) >= 1,
           "count_multiclass: expected floating logits (N, C, *), got ",
           logits.defined() ? logits.describe() : std::string("undefined"));
  Shape expected = logits.shape();
  expected.erase(expected.begin() + 1);
  RG_CHECK(target.dtype() == DType::i64 && target.shape() == expected,
           "count_multiclass: expected a target of i64 class indices shaped as the logits "
           "without their class dim, got logits ",
           logits.describe(), " and target ", target.describe());
  const int64_t C = logits.size(1);
  const Tensor predicted = predict_multiclass(logits);
  const uint8_t* p = predicted.data<uint8_t>();
  const std::vector<int64_t> t = target.to_vector<int64_t>();
  SegmentationCounts counts(C);
  for (std::size_t i = 0; i < t.size(); ++i) {
    const int64_t y = t[i];
    RG_CHECK(y >= 0 && y < C, "count_multiclass: target holds class ", y, " outside [0, ", C, ")");
    counts.predicted[p[i]] += 1;
    counts.target[static_cast<std::size_t>(y)] += 1;
    counts.intersection[static_cast<std::size_t>(y)] += p[i] == y;
  }
  return counts;
}

}  // namespace rg::nn
