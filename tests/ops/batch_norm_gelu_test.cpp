// batch_norm_gelu: gelu(batch_norm(...)) as one op (ops/batch_norm/batch_norm.h), the fused pair
// of airbench94. Its gradchecks, PyTorch parity and bad inputs are in its spec
// (ops/batch_norm/batch_norm_spec.cpp); its kernels' CPU/CUDA parity (emulated) is in
// tests/kernels/batch_norm_kernels_test.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

// The unit roundoff of a 16-bit dtype: half its ulp at 1.
double unit_roundoff(DType d) {
  return d == DType::bf16 ? 0x1p-8 : d == DType::f16 ? 0x1p-11 : d == DType::f32 ? 0x1p-24 : 0.0;
}

// How far the fused op's weight and bias gradients may be from the unfused pair's under 16-bit
// data, per channel. gelu(batch_norm(...)) rounds batch_norm's output v to 16 bits before gelu's
// backward, and gelu's gradient g = gy·gelu'(v) to 16 bits before batch_norm's backward sums it;
// the fused op does neither. With u the unit roundoff and |gelu''| < 1, each term of
// Σ g (the bias gradient) moves by at most e = u·(|g| + |gy|·|v|), each of Σ g·x̂ (the weight's)
// by e·|x̂|; the two results are also rounded to the parameters' dtype once each. Computed in f64
// from the same inputs: (bias bound, weight bound) per channel.
// Also, per channel, the f64 sums themselves (the gradients in exact arithmetic on the same
// 16-bit inputs) and the sums of their terms' sizes, Σ|g| and Σ|g·x̂|.
struct SumBounds {
  std::vector<double> bias, weight;
  std::vector<double> bias_f64, weight_f64, bias_size, weight_size;
};
SumBounds rounding_bounds(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm,
                          const Tensor& rv, BatchNormMode mode, const Tensor& gy) {
  Tensor rm64 = rm.to(DType::f64).clone(), rv64 = rv.to(DType::f64).clone();
  Tensor v = batch_norm(x.to(DType::f64), w.to(DType::f64), b.to(DType::f64), rm64, rv64, mode)
                 .detach()
                 .set_requires_grad(true);
  gelu(v).backward(gy.to(DType::f64));
  const std::vector<double> vs = v.detach().to_vector<double>(), gs = v.grad().to_vector<double>(),
                            gys = gy.to(DType::f64).to_vector<double>(),
                            ws = w.to(DType::f64).to_vector<double>(),
                            bs = b.to(DType::f64).to_vector<double>();
  const double u = unit_roundoff(x.dtype());
  const int64_t c_count = x.size(1), s = x.numel() / x.size(0) / c_count;
  const std::vector<double> zero(static_cast<std::size_t>(c_count), 0.0);
  SumBounds out{zero, zero, zero, zero, zero, zero};
  for (std::size_t i = 0; i < vs.size(); ++i) {
    const std::size_t c = static_cast<std::size_t>(static_cast<int64_t>(i) / s % c_count);
    const double e = u * (std::abs(gs[i]) + std::abs(gys[i]) * std::abs(vs[i]));
    const double xhat = (vs[i] - bs[c]) / ws[c];
    out.bias[c] += e;
    out.weight[c] += e * std::abs(xhat);
    out.bias_f64[c] += gs[i];
    out.weight_f64[c] += gs[i] * xhat;
    out.bias_size[c] += std::abs(gs[i]);
    out.weight_size[c] += std::abs(gs[i] * xhat);
  }
  return out;
}

void expect_within(const Tensor& fused, const Tensor& plain, const std::vector<double>& bound,
                   DType param_dtype) {
  const std::vector<double> f = fused.to(DType::f64).to_vector<double>(),
                            p = plain.to(DType::f64).to_vector<double>();
  const double up = unit_roundoff(param_dtype);
  for (std::size_t c = 0; c < f.size(); ++c)
    EXPECT_LE(std::abs(f[c] - p[c]), bound[c] + up * (std::abs(f[c]) + std::abs(p[c])))
        << "channel " << c << ": fused " << f[c] << ", unfused " << p[c];
}

// The fused op's weight and bias gradients against the f64 sums on the same 16-bit inputs: its
// terms are computed in f32 (relative error ~1e-7 each, 1e-5 allowed) and summed in f64, then
// rounded once to the parameters' dtype — far tighter than the unfused pair's bound.
void expect_near_f64(const Tensor& fused, const std::vector<double>& exact,
                     const std::vector<double>& size, DType param_dtype) {
  const std::vector<double> f = fused.to(DType::f64).to_vector<double>();
  for (std::size_t c = 0; c < f.size(); ++c)
    EXPECT_LE(std::abs(f[c] - exact[c]),
              1e-5 * size[c] + unit_roundoff(param_dtype) * std::abs(exact[c]))
        << "channel " << c << ": fused " << f[c] << ", f64 " << exact[c];
}

// Against gelu(batch_norm(...)), which airbench94 ran before: gelu is computed in the same type on
// the same value rounded to it, so in f32 and f64 the two differ only where the fused op's fma
// rounds v differently from batch_norm's multiply-add (then by gelu's slope times that rounding).
// In the 16-bit dtypes (O2 mixed precision: 16-bit x, f32 parameters) the unfused pair also
// rounds v and gelu's gradient to 16 bits, which the fused op does not: y and gx stay within one
// 16-bit rounding, the weight and bias gradients within the bound of rounding_bounds.
TEST(BatchNormGelu, MatchesTheUnfusedComposition) {
  struct Case {
    DType x, params;
  };
  for (const Case& c :
       {Case{DType::f32, DType::f32}, Case{DType::f64, DType::f64}, Case{DType::bf16, DType::f32},
        Case{DType::f16, DType::f32}, Case{DType::bf16, DType::bf16}}) {
    SCOPED_TRACE(std::string(dtype_name(c.x)) + " x, " + std::string(dtype_name(c.params)));
    for (BatchNormMode mode : {BatchNormMode::train, BatchNormMode::eval}) {
      const Tensor x0 = (randn({8, 16, 6, 6}) * 2.0 + 0.3).to(c.x);
      const Tensor gy = randn({8, 16, 6, 6}).to(c.x);
      const Tensor w0 = (rand({16}) + 0.5).to(c.params), b0 = randn({16}).to(c.params);
      const Tensor rm0 = (randn({16}) * 0.1).to(c.params), rv0 = (rand({16}) + 0.5).to(c.params);
      auto run = [&](bool fused) {
        Tensor x = x0.clone().set_requires_grad(true), w = w0.clone().set_requires_grad(true),
               b = b0.clone().set_requires_grad(true);
        Tensor rm = rm0.clone(), rv = rv0.clone();
        Tensor y = fused ? batch_norm_gelu(x, w, b, rm, rv, mode)
                         : gelu(batch_norm(x, w, b, rm, rv, mode));
        y.backward(gy);
        return std::vector<Tensor>{y, x.grad(), w.grad(), b.grad(), rm, rv};
      };
      const std::vector<Tensor> fused = run(true), plain = run(false);
      // The running stats come from the same statistics pass: equal.
      EXPECT_TRUE(all_close(fused[4], plain[4], 0, 0));
      EXPECT_TRUE(all_close(fused[5], plain[5], 0, 0));
      const bool wide = c.x == DType::f32 || c.x == DType::f64;
      const double tol = c.x == DType::f64 ? 1e-14 : c.x == DType::f32 ? 1e-6 : 1e-2;
      for (std::size_t i = 0; i < (wide ? 4 : 2); ++i) {
        SCOPED_TRACE(i);
        EXPECT_TRUE(all_close(fused[i], plain[i], tol, tol));
      }
      if (!wide) {
        const SumBounds bounds = rounding_bounds(x0, w0, b0, rm0, rv0, mode, gy);
        expect_within(fused[2], plain[2], bounds.weight, c.params);
        expect_within(fused[3], plain[3], bounds.bias, c.params);
        expect_near_f64(fused[2], bounds.weight_f64, bounds.weight_size, c.params);
        expect_near_f64(fused[3], bounds.bias_f64, bounds.bias_size, c.params);
      }
    }
  }
}

TEST(BatchNormGelu, GradientsStayOnTheInputsDevice) {
  const Device device = Device::parse("cpu:1");
  Tensor x = randn({4, 3, 2, 2}).to(device).set_requires_grad(true);
  Tensor w = ones({3}, {DType::f32, device}).set_requires_grad(true);
  Tensor b = zeros({3}, {DType::f32, device}).set_requires_grad(true);
  sum(batch_norm_gelu(x, w, b, Tensor(), Tensor(), BatchNormMode::train)).backward();
  EXPECT_EQ(x.grad().device(), device);
  EXPECT_EQ(w.grad().device(), device);
  EXPECT_EQ(b.grad().device(), device);
}

}  // namespace
}  // namespace rg
