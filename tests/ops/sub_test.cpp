#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Sub, GradcheckSameShapeAndBroadcastBothWays) {
  auto fn = [](const std::vector<Tensor>& in) { return sub(in[0], in[1]); };
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3}), grad_input({2, 3}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3, 2}), grad_input({3, 1}, -1, 1, 2)}));  // b bcast
  EXPECT_TRUE(gradcheck(fn, {grad_input({3}), grad_input({2, 3}, -1, 1, 2)}));        // a bcast
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 1, 3}), grad_input({4, 1}, -1, 1, 2)}));  // both
  // Only one side requires grad: the other gets none.
  Tensor a = grad_input({2, 3}), b = grad_input({3}, -1, 1, 2).set_requires_grad(false);
  EXPECT_TRUE(gradcheck(fn, {a, b}));
  (a - b).backward(ones({2, 3}, {DType::f64}));
  EXPECT_FALSE(b.grad().defined());
}

TEST(Sub, GradcheckScalarForms) {
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return in[0] - 2.5; }, {grad_input({2, 3})}));
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return 2.5 - in[0]; }, {grad_input({2, 3})}));
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return sub(-1.0, in[0]); }, {grad_input({4})}));
}

TEST(Sub, OperatorsMatchFunctions) {
  Tensor a = from_vector<float>({1, 2, 3}, {3}), b = from_vector<float>({0.5f, 4, -1}, {3});
  EXPECT_EQ((a - b).to_vector<float>(), (std::vector<float>{0.5f, -2, 4}));
  EXPECT_EQ((a - 1.0).to_vector<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ((10.0 - a).to_vector<float>(), (std::vector<float>{9, 8, 7}));
  EXPECT_EQ(sub(10.0, a).to_vector<float>(), (std::vector<float>{9, 8, 7}));
}

TEST(Sub, MatchesPyTorch) {
  Fixture f("sub");
  for (std::string c : {"same", "bcast_b", "bcast_both"}) {
    SCOPED_TRACE(c);
    Tensor a = f[c + ".a"].set_requires_grad(true), b = f[c + ".b"].set_requires_grad(true);
    Tensor y = a - b;
    EXPECT_TRUE(all_close(y, f[c + ".y"]));
    y.backward(f[c + ".gy"]);
    EXPECT_TRUE(all_close(a.grad(), f[c + ".ga"]));
    EXPECT_TRUE(all_close(b.grad(), f[c + ".gb"]));
  }
  Tensor a = f["scalar.a"].set_requires_grad(true);
  Tensor y = a - 1.5;
  EXPECT_TRUE(all_close(y, f["scalar.y"]));
  y.backward(f["scalar.gy"]);
  EXPECT_TRUE(all_close(a.grad(), f["scalar.ga"]));
  Tensor r = f["rscalar.a"].set_requires_grad(true);
  Tensor yr = 2.5 - r;
  EXPECT_TRUE(all_close(yr, f["rscalar.y"]));
  yr.backward(f["rscalar.gy"]);
  EXPECT_TRUE(all_close(r.grad(), f["rscalar.ga"]));
}

TEST(Sub, BadInput) {
  EXPECT_TRUE(throws_error(
      [] {
        sub(ones({2, 3}), ones({4}));
      },
      {"sub", "[2, 3]", "[4]", "broadcast"}));
  EXPECT_TRUE(throws_error([] { sub(ones({2}), ones({2}, {DType::f64})); },
                           {"sub", "dtype mismatch", "[2] f32 cpu", "[2] f64 cpu"}));
  EXPECT_TRUE(throws_error([] { sub(ones({2}, {DType::i64}), 1.0); }, {"sub", "[2] i64 cpu"}));
  EXPECT_TRUE(throws_error([] { sub(1.0, ones({2}, {DType::u8})); }, {"sub", "[2] u8 cpu"}));
}

}  // namespace
}  // namespace rg
