#pragma once
// A conv2d by the plain loop, in f64, for the tests of the CPU kernels (conv2d_direct_test.cpp,
// conv2d_depthwise_test.cpp): the products of a convolution (ops/conv/conv2d/conv2d_direct.h's
// DirectConv) summed for y, gw and gx, and the rounding bound a kernel's result must keep to.
#include <cmath>
#include <limits>
#include <vector>

#include "ops/conv/conv2d/conv2d_direct.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg::testing {
using detail::DirectConv;

inline DirectConv make(int64_t N, int64_t G, int64_t C, int64_t H, int64_t W, int64_t O, int64_t kH,
                       int64_t kW, int64_t pH, int64_t pW, int64_t dH = 1, int64_t dW = 1,
                       int64_t sH = 1, int64_t sW = 1) {
  const int64_t Ho = (H + 2 * pH - dH * (kH - 1) - 1) / sH + 1;
  const int64_t Wo = (W + 2 * pW - dW * (kW - 1) - 1) / sW + 1;
  return {N, G, C, H, W, O, kH, kW, pH, pW, dH, dW, sH, sW, Ho, Wo};
}

inline Shape x_shape(const DirectConv& g) {
  return {g.N, g.G * g.C, g.H, g.W};
}
inline Shape w_shape(const DirectConv& g) {
  return {g.G * g.O, g.C, g.kH, g.kW};
}
inline Shape y_shape(const DirectConv& g) {
  return {g.N, g.G * g.O, g.Ho, g.Wo};
}

// The plain loop: calls f(y_index, x_index, w_index) for every product of the convolution g
// (output (n, o, ho, wo), input pixel (n, grp·C + c, h, w) inside the image, weight (o, c, i,
// j)), the taps of each output in order.
template <class F>
void for_each_product(const DirectConv& g, F&& f) {
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t o = 0; o < g.G * g.O; ++o)
      for (int64_t ho = 0; ho < g.Ho; ++ho)
        for (int64_t wo = 0; wo < g.Wo; ++wo) {
          const auto yi = static_cast<std::size_t>(((n * g.G * g.O + o) * g.Ho + ho) * g.Wo + wo);
          const int64_t grp = o / g.O;
          for (int64_t c = 0; c < g.C; ++c)
            for (int64_t i = 0; i < g.kH; ++i)
              for (int64_t j = 0; j < g.kW; ++j) {
                const int64_t h = ho * g.sH - g.pH + i * g.dH, ww = wo * g.sW - g.pW + j * g.dW;
                if (h < 0 || h >= g.H || ww < 0 || ww >= g.W) continue;
                f(yi,
                  static_cast<std::size_t>(((n * g.G * g.C + grp * g.C + c) * g.H + h) * g.W + ww),
                  static_cast<std::size_t>(((o * g.C + c) * g.kH + i) * g.kW + j));
              }
        }
}

// y, gw and gx of the convolution g by the plain loop, in f64.
inline Tensor reference_forward(const DirectConv& g, const Tensor& x, const Tensor& w,
                                const Tensor& b) {
  const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
  std::vector<double> y(static_cast<std::size_t>(numel_of(y_shape(g))), 0.0);
  if (b.defined()) {
    const std::vector<double> bv = b.to_vector<double>();
    for (std::size_t k = 0; k < y.size(); ++k)
      y[k] = bv[k / static_cast<std::size_t>(g.Ho * g.Wo) % bv.size()];
  }
  for_each_product(
      g, [&](std::size_t yi, std::size_t xi, std::size_t wi) { y[yi] += wv[wi] * xv[xi]; });
  return from_vector(y, y_shape(g), {DType::f64});
}

inline Tensor reference_backward_weight(const DirectConv& g, const Tensor& gy, const Tensor& x) {
  const std::vector<double> xv = x.to_vector<double>(), gv = gy.to_vector<double>();
  std::vector<double> gw(static_cast<std::size_t>(numel_of(w_shape(g))), 0.0);
  for_each_product(
      g, [&](std::size_t yi, std::size_t xi, std::size_t wi) { gw[wi] += gv[yi] * xv[xi]; });
  return from_vector(gw, w_shape(g), {DType::f64});
}

inline Tensor reference_backward_data(const DirectConv& g, const Tensor& gy, const Tensor& w) {
  const std::vector<double> gv = gy.to_vector<double>(), wv = w.to_vector<double>();
  std::vector<double> gx(static_cast<std::size_t>(numel_of(x_shape(g))), 0.0);
  for_each_product(
      g, [&](std::size_t yi, std::size_t xi, std::size_t wi) { gx[xi] += gv[yi] * wv[wi]; });
  return from_vector(gx, x_shape(g), {DType::f64});
}

// |t| elementwise, in f64.
inline Tensor magnitude(const Tensor& t) {
  std::vector<double> v = t.to_vector<double>();
  for (double& e : v) e = std::abs(e);
  return from_vector(v, t.shape(), {DType::f64});
}

// |actual − expected| ≤ atol + rtol·|expected| + 4·u·scale elementwise, with u the unit
// roundoff of T and scale the same sums over the terms' magnitudes (|x|·|w|, ...): rounding
// grows with the terms, not with a result that cancels (the classical bound is n·u·scale for
// n terms). In f64 the last term is negligible. `rounding` replaces the 4 for kernels whose
// transforms magnify rounding (Winograd F(4×4)).
template <class T>
::testing::AssertionResult close_to_reference(const Tensor& actual, const Tensor& expected,
                                              const Tensor& scale, double atol, double rtol,
                                              double rounding = 4) {
  const double u = std::numeric_limits<T>::epsilon() / 2;
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  const std::vector<double> m = scale.to_vector<double>();
  if (a.size() != e.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double bound = atol + rtol * std::abs(e[i]) + rounding * u * m[i];
    if (!(std::abs(a[i] - e[i]) <= bound))
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << ", expected "
                                           << e[i] << " (bound " << bound << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace rg::testing
