#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Relu, Gradcheck) {
  // Inputs kept away from the kink at 0, where the derivative is undefined.
  Tensor x = from_vector<double>({-1.5, -0.3, 0.2, 0.9, 2.0, -0.7}, {2, 3}, {DType::f64});
  x.set_requires_grad(true);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return relu(in[0]); }, {x}));
}

TEST(Relu, MatchesPyTorch) {
  Fixture f("relu");
  Tensor x = f["x"].set_requires_grad(true);
  Tensor y = relu(x);
  EXPECT_TRUE(all_close(y, f["y"]));
  y.backward(f["gy"]);
  EXPECT_TRUE(all_close(x.grad(), f["gx"]));
}

TEST(Relu, BadInput) {
  EXPECT_TRUE(throws_error([] { relu(ones({2}, {DType::i64})); }, {"relu", "[2] i64 cpu"}));
}

}  // namespace
}  // namespace rg
