#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// Operands whose sums stay away from the kink at 0, where the derivative is undefined.
Tensor away_from_kink(const Shape& shape, double sign_seed) {
  Tensor t = grad_input(shape, 0.2, 1.0, static_cast<uint64_t>(sign_seed));
  std::vector<double> v = t.to_vector<double>();
  for (std::size_t i = 0; i < v.size(); ++i)
    if ((i + static_cast<std::size_t>(sign_seed)) % 3 == 0) v[i] = -v[i] - 1.5;
  return from_vector(v, shape, {DType::f64}).set_requires_grad(true);
}

TEST(AddRelu, GradcheckSameShapeAndBroadcast) {
  auto fn = [](const std::vector<Tensor>& in) { return add_relu(in[0], in[1]); };
  EXPECT_TRUE(gradcheck(fn, {away_from_kink({2, 3}, 1), grad_input({2, 3}, -0.1, 0.1, 2)}));
  EXPECT_TRUE(gradcheck(fn, {away_from_kink({2, 4, 3}, 2), grad_input({4, 1}, -0.1, 0.1, 3)}));
  EXPECT_TRUE(gradcheck(fn, {grad_input({3}, -0.1, 0.1, 4), away_from_kink({2, 3}, 5)}));
}

TEST(AddRelu, MatchesPyTorch) {
  Fixture f("add_relu");
  for (const char* name : {"same", "broadcast"}) {
    SCOPED_TRACE(name);
    const std::string p = std::string(name) + ".";
    Tensor a = f[p + "a"].set_requires_grad(true), b = f[p + "b"].set_requires_grad(true);
    Tensor y = add_relu(a, b);
    EXPECT_TRUE(all_close(y, f[p + "y"]));
    y.backward(f[p + "gy"]);
    EXPECT_TRUE(all_close(a.grad(), f[p + "ga"]));
    EXPECT_TRUE(all_close(b.grad(), f[p + "gb"]));
  }
}

// The fused op and relu(a + b) round the sum once each, so they agree bit for bit, forward and
// backward, in every dtype (16-bit types computed in f32 and rounded once).
TEST(AddRelu, BitIdenticalToTheUnfusedComposition) {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor a0 = randn({4, 8, 5, 5}).to(dtype), b0 = randn({4, 8, 5, 5}).to(dtype);
    const Tensor gy = randn({4, 8, 5, 5}).to(dtype);
    Tensor a1 = a0.clone().set_requires_grad(true), b1 = b0.clone().set_requires_grad(true);
    Tensor a2 = a0.clone().set_requires_grad(true), b2 = b0.clone().set_requires_grad(true);
    Tensor fused = add_relu(a1, b1), plain = relu(a2 + b2);
    EXPECT_TRUE(all_close(fused, plain, 0, 0));
    fused.backward(gy);
    plain.backward(gy);
    EXPECT_TRUE(all_close(a1.grad(), a2.grad(), 0, 0));
    EXPECT_TRUE(all_close(b1.grad(), b2.grad(), 0, 0));
  }
}

TEST(AddRelu, BadInput) {
  EXPECT_TRUE(throws_error(
      [] {
        add_relu(ones({2, 3}), ones({4}));
      },
      {"add_relu", "[2, 3]", "[4]", "broadcast"}));
  EXPECT_TRUE(throws_error([] { add_relu(ones({2}), ones({2}, {DType::f64})); },
                           {"add_relu", "dtype mismatch", "[2] f32 cpu", "[2] f64 cpu"}));
  EXPECT_TRUE(throws_error([] { add_relu(ones({2}, {DType::i64}), ones({2}, {DType::i64})); },
                           {"add_relu", "[2] i64 cpu"}));
}

}  // namespace
}  // namespace rg
