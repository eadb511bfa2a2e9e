#include <gtest/gtest.h>

#include <vector>

#include "core/config.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of gelu are in its spec (ops/gelu/gelu_spec.cpp).
// Far tails: Φ(x) = ½(1 + erf(x/√2)) rounds to exactly 0 below about −8.3 (f64), so gelu is −0
// there; φ(x) underflows to 0 below about −38.6, so from there the gradient is exactly 0, never
// NaN. Far above, gelu(x) = x and the gradient 1. 16-bit inputs compute in f32.
TEST(Gelu, TailsAndHalfPrecision) {
  const Tensor x = from_vector<double>({-800, -40, 0, 40, 800}, {5}, {DType::f64});
  EXPECT_TRUE(all_close(gelu(x), from_vector<double>({0, 0, 0, 40, 800}, {5}, {DType::f64}), 0, 0));
  Tensor xg = x.clone().set_requires_grad(true);
  gelu(xg).backward(ones({5}, {DType::f64}));
  EXPECT_TRUE(
      all_close(xg.grad(), from_vector<double>({0, 0, 0.5, 1, 1}, {5}, {DType::f64}), 0, 0));
  const Tensor h = from_vector<double>({-3, -0.5, 0.25, 2}, {4}, {DType::f64});
  for (DType dtype : {DType::f16, DType::bf16})
    EXPECT_TRUE(all_close(gelu(h.to(dtype)).to(DType::f64), gelu(h).to(dtype).to(DType::f64), 0, 0))
        << dtype;
}

}  // namespace
}  // namespace rg
