#include "train/inference.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/autograd.h"
#include "nn/segmentation_metrics.h"

namespace rg::train {
namespace {

// The spatial sides of a (N, C, *S) tensor as (D, H, W), D = 1 for 2-D inputs: one code path.
std::array<int64_t, 3> volume_sides(const std::vector<int64_t>& sides) {
  if (sides.size() == 2) return {1, sides[0], sides[1]};
  return {sides[0], sides[1], sides[2]};
}

}  // namespace

Tensor infer(nn::Module& model, const Tensor& x, const StepContext& context) {
  NoGradGuard no_grad;
  // Pinned inputs (the loader pins batches for a GPU) are copied while the device still works.
  const Tensor input = context.amp.cast_input(x.to(context.device, NonBlocking::yes));
  auto autocast = context.amp.autocast();  // O1 only
  return model.forward(input).to(DType::f32).to(Device::cpu());
}

std::vector<int64_t> window_starts(int64_t side, int64_t window, double overlap) {
  RG_CHECK(side >= 1 && window >= 1 && overlap >= 0 && overlap < 1,
           "window_starts: expected a side and a window >= 1 and an overlap in [0, 1), got ", side,
           ", ", window, " and ", overlap);
  if (side <= window) return {0};
  const auto step = std::max<int64_t>(
      1, static_cast<int64_t>(std::floor(static_cast<double>(window) * (1.0 - overlap))));
  std::vector<int64_t> starts;
  for (int64_t s = 0;; s += step) {
    starts.push_back(std::min(s, side - window));
    if (s + window >= side) break;
  }
  return starts;
}

Tensor sliding_window_logits(const Tensor& inputs, const SlidingWindow& sw,
                             const std::function<Tensor(const Tensor&)>& forward) {
  const auto dims = static_cast<int64_t>(sw.window.size());
  RG_CHECK((dims == 2 || dims == 3) && inputs.defined() && inputs.dim() == dims + 2 &&
               inputs.dtype() == DType::f32 && inputs.device().is_cpu(),
           "sliding window: expected f32 host inputs (N, C, ", dims == 3 ? "D, H, W" : "H, W",
           ") for a window of ", dims, " sides, got ",
           inputs.defined() ? inputs.describe() : std::string("nothing"));
  RG_CHECK(sw.batch >= 1 && sw.overlap >= 0 && sw.overlap < 1,
           "sliding window: batch must be >= 1 and overlap in [0, 1), got ", sw.batch, " and ",
           sw.overlap);
  for (int64_t w : sw.window) RG_CHECK(w >= 1, "sliding window: a window side of ", w);
  const Tensor x = inputs.contiguous();
  const int64_t N = x.size(0), C = x.size(1);
  std::vector<int64_t> sides(x.shape().begin() + 2, x.shape().end());
  const auto S = volume_sides(sides);  // the input's (D, H, W)
  const auto w = volume_sides(sw.window);
  std::array<int64_t, 3> P{};  // padded to at least the window
  for (int a = 0; a < 3; ++a) P[a] = std::max(S[a], w[a]);
  const bool volume = dims == 3;
  const auto zs = window_starts(P[0], w[0], volume ? sw.overlap : 0);
  const auto ys = window_starts(P[1], w[1], sw.overlap);
  const auto xs = window_starts(P[2], w[2], sw.overlap);
  struct Place {
    int64_t n, z, y, x;
  };
  std::vector<Place> places;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t z : zs)
      for (int64_t y : ys)
        for (int64_t x0 : xs) places.push_back({n, z, y, x0});

  const int64_t plane_in = S[0] * S[1] * S[2];  // per channel of one input
  const int64_t plane_pad = P[0] * P[1] * P[2];
  const int64_t plane_w = w[0] * w[1] * w[2];
  std::vector<float> count(static_cast<std::size_t>(plane_pad), 0.0f);
  std::vector<float> sum;  // (N, K, P): sized after the first forward tells K
  int64_t K = 0;
  Shape window_shape{0, C};
  for (int64_t side : sw.window) window_shape.push_back(side);
  const float* in = x.data<float>();

  for (std::size_t first = 0; first < places.size(); first += static_cast<std::size_t>(sw.batch)) {
    const std::size_t last = std::min(places.size(), first + static_cast<std::size_t>(sw.batch));
    const auto B = static_cast<int64_t>(last - first);
    window_shape[0] = B;
    Tensor batch = zeros(window_shape, {DType::f32});
    float* b = batch.data<float>();
    for (int64_t i = 0; i < B; ++i) {
      const Place& p = places[first + static_cast<std::size_t>(i)];
      for (int64_t c = 0; c < C; ++c)
        for (int64_t z = 0; z < w[0] && p.z + z < S[0]; ++z)
          for (int64_t y = 0; y < w[1] && p.y + y < S[1]; ++y) {
            const float* row = in + (p.n * C + c) * plane_in + ((p.z + z) * S[1] + p.y + y) * S[2];
            float* out = b + (i * C + c) * plane_w + (z * w[1] + y) * w[2];
            const int64_t len = std::min(w[2], S[2] - p.x);
            std::copy(row + p.x, row + p.x + len, out);
          }
    }
    const Tensor logits = forward(batch).to(Device::cpu()).to(DType::f32).contiguous();
    Shape expected = window_shape;
    expected[1] = logits.dim() > 1 ? logits.size(1) : 0;
    RG_CHECK(logits.shape() == expected && expected[1] >= 1, "sliding window: the model gave ",
             logits.describe(), " for windows ", batch.describe(), "; expected (", B,
             ", K) and the window's sides");
    if (K == 0) {
      K = expected[1];
      sum.assign(static_cast<std::size_t>(N * K * plane_pad), 0.0f);
    }
    RG_CHECK(expected[1] == K, "sliding window: the model gave ", expected[1], " outputs, earlier ",
             K);
    const float* l = logits.data<float>();
    for (int64_t i = 0; i < B; ++i) {
      const Place& p = places[first + static_cast<std::size_t>(i)];
      for (int64_t k = 0; k < K; ++k)
        for (int64_t z = 0; z < w[0]; ++z)
          for (int64_t y = 0; y < w[1]; ++y) {
            const float* from = l + (i * K + k) * plane_w + (z * w[1] + y) * w[2];
            float* to =
                sum.data() + (p.n * K + k) * plane_pad + ((p.z + z) * P[1] + p.y + y) * P[2] + p.x;
            for (int64_t xx = 0; xx < w[2]; ++xx) to[xx] += from[xx];
          }
      if (p.n == 0)  // the windows of every input cover the same places
        for (int64_t z = 0; z < w[0]; ++z)
          for (int64_t y = 0; y < w[1]; ++y) {
            float* c = count.data() + ((p.z + z) * P[1] + p.y + y) * P[2] + p.x;
            for (int64_t xx = 0; xx < w[2]; ++xx) c[xx] += 1.0f;
          }
    }
  }

  Shape out_shape{N, K};
  for (int64_t side : sides) out_shape.push_back(side);
  Tensor out = empty(out_shape, {DType::f32});
  float* o = out.data<float>();
  for (int64_t nk = 0; nk < N * K; ++nk)
    for (int64_t z = 0; z < S[0]; ++z)
      for (int64_t y = 0; y < S[1]; ++y)
        for (int64_t xx = 0; xx < S[2]; ++xx) {
          const int64_t at = (z * P[1] + y) * P[2] + xx;
          o[nk * plane_in + (z * S[1] + y) * S[2] + xx] =
              sum[static_cast<std::size_t>(nk * plane_pad + at)] /
              count[static_cast<std::size_t>(at)];
        }
  return out;
}

Tensor predicted_masks(const Tensor& logits) {
  RG_CHECK(logits.defined() && logits.dim() >= 3,
           "predicted_masks: expected logits (N, K, *S), got ",
           logits.defined() ? logits.describe() : std::string("nothing"));
  if (logits.size(1) == 1) return nn::predict_binary(logits.squeeze(1));
  return nn::predict_multiclass(logits);
}

std::vector<TopK> top_k(const Tensor& logits, int64_t k) {
  RG_CHECK(logits.defined() && logits.dim() == 2 && is_floating(logits.dtype()),
           "top_k: expected floating logits (N, K), got ",
           logits.defined() ? logits.describe() : std::string("nothing"));
  const int64_t N = logits.size(0), K = logits.size(1);
  RG_CHECK(k >= 1, "top_k: k must be >= 1, got ", k);
  k = std::min(k, K);
  const std::vector<double> v = logits.to_vector<double>();
  std::vector<TopK> out;
  for (int64_t n = 0; n < N; ++n) {
    const double* row = v.data() + n * K;
    RG_CHECK(std::all_of(row, row + K, [](double x) { return std::isfinite(x); }),
             "top_k: the logits of input ", n, " are not all finite (the model overflowed?)");
    const double top = *std::max_element(row, row + K);
    std::vector<double> p(static_cast<std::size_t>(K));
    double total = 0;
    for (int64_t c = 0; c < K; ++c)
      total += p[static_cast<std::size_t>(c)] = std::exp(row[c] - top);
    std::vector<int64_t> order(static_cast<std::size_t>(K));
    std::iota(order.begin(), order.end(), 0);
    // Ranked by logit, not by the rounded probability: the arg-max is evaluation's prediction.
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return row[a] > row[b]; });
    TopK t;
    for (int64_t i = 0; i < k; ++i) {
      t.classes.push_back(order[static_cast<std::size_t>(i)]);
      t.probabilities.push_back(p[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] /
                                total);
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace rg::train
