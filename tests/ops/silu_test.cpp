#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/config.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of silu are in its spec (ops/silu/silu_spec.cpp).
// The fused op computes what its composition computes, forward and backward, in every dtype
// (within a few units in the last place: the composition rounds between its two kernels).
TEST(Silu, MatchesTheUnfusedComposition) {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor v = add(mul(rand({5, 37}, {DType::f64}), 12.0), -6.0).to(dtype);
    Tensor a = v.clone().set_requires_grad(true), b = v.clone().set_requires_grad(true);
    const Tensor fused = silu(a), unfused = mul(b, sigmoid(b));
    const double tol = dtype == DType::f64 ? 1e-14 : device_parity_tolerance(dtype);
    EXPECT_TRUE(all_close(fused, unfused, tol, tol));
    const Tensor gy = rand({5, 37}, {DType::f64}).to(dtype);
    fused.backward(gy);
    unfused.backward(gy);
    EXPECT_TRUE(all_close(a.grad(), b.grad(), tol, tol));
  }
}

TEST(Silu, ExtremeInputsStayFinite) {
  // σ never overflows, so the far left tail gives (−)0 — never NaN from −∞·0.
  Tensor x = from_vector<double>({-800, -50, 0, 50, 800}, {5}, {DType::f64});
  x.set_requires_grad(true);
  Tensor y = silu(x);
  std::vector<double> v = y.to_vector<double>();
  EXPECT_EQ(v[0], 0.0);
  EXPECT_NEAR(v[1], -50 * std::exp(-50.0), 1e-30);
  EXPECT_EQ(v[2], 0.0);
  EXPECT_EQ(v[3], 50.0);
  EXPECT_EQ(v[4], 800.0);
  y.backward(ones({5}, {DType::f64}));
  std::vector<double> g = x.grad().to_vector<double>();
  EXPECT_EQ(g[0], 0.0);
  EXPECT_EQ(g[2], 0.5);
  EXPECT_EQ(g[4], 1.0);
}

}  // namespace
}  // namespace rg
