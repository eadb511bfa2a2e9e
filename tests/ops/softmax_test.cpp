#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradchecks, PyTorch parity and bad inputs of softmax are in its spec
// (ops/softmax/softmax_spec.cpp).
TEST(Softmax, StableForHugeLogitsAndRowsSumToOne) {
  manual_seed(1);  // fixed data whatever ran before
  Tensor y = softmax(from_vector<float>({1000, 999, -1000, 0}, {1, 4}), 1);
  const std::vector<float> v = y.to_vector<float>();
  EXPECT_NEAR(v[0], 1 / (1 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(v[1], std::exp(-1.0) / (1 + std::exp(-1.0)), 1e-6);
  EXPECT_EQ(v[2], 0.0f);
  // Many threads, both layouts: every lane sums to 1.
  Tensor x = randn({64, 50, 33});
  EXPECT_TRUE(all_close(sum(softmax(x, 2), {2}), ones({64, 50}), 1e-5, 0));
  EXPECT_TRUE(all_close(sum(softmax(x, 1), {1}), ones({64, 33}), 1e-5, 0));
  EXPECT_TRUE(all_close(sum(softmax(x, 0), {0}), ones({50, 33}), 1e-5, 0));
}

// Rows of 20 floats start 80 bytes apart, so the two copies of each of 64 random rows sit at
// different offsets from a vector register's alignment (AVX2's 32 bytes, AVX-512's 64). Eigen
// computed the elements before the first aligned address and past the last whole packet with
// std::exp, the others with its packet exp — a last-bit difference that made a row's softmax
// depend on where it lay, and training on where malloc put a buffer. Both copies must agree.
TEST(Softmax, ARowGivesTheSameBitsWhereverItLies) {
  manual_seed(3);
  const Tensor x = randn({64, 1, 20}).expand({64, 2, 20}).reshape({128, 20});
  for (const Tensor& y : {softmax(x, 1), log_softmax(x, 1)}) {
    const std::vector<float> v = y.to_vector<float>();
    for (std::size_t r = 0; r < 128; r += 2)
      for (std::size_t c = 0; c < 20; ++c)
        ASSERT_EQ(v[(r + 1) * 20 + c], v[r * 20 + c]) << "row " << r << " column " << c;
  }
}

TEST(Softmax, HalfTypesAndScalars) {
  manual_seed(2);  // fixed data whatever ran before
  Tensor x = randn({5, 7});
  EXPECT_TRUE(all_close(softmax(x.to(DType::bf16), 1).to(DType::f32), softmax(x, 1), 1e-2, 1e-2));
  EXPECT_TRUE(all_close(softmax(x.to(DType::f16), 0).to(DType::f32), softmax(x, 0), 1e-3, 1e-3));
  EXPECT_EQ(softmax(scalar_tensor(3.0), 0).item(), 1.0);
  // Backward through the 16-bit staging path, rows and segments.
  for (int64_t dim : {0, 1}) {
    Tensor xf = x.detach().set_requires_grad(true);
    Tensor xh = x.to(DType::f16).detach().set_requires_grad(true);
    Tensor gy = randn({5, 7});
    softmax(xf, dim).backward(gy);
    softmax(xh, dim).backward(gy.to(DType::f16));
    EXPECT_TRUE(all_close(xh.grad().to(DType::f32), xf.grad(), 2e-3, 1e-2));
  }
}

}  // namespace
}  // namespace rg
