#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Add, GradcheckSameShapeBroadcastAndScalar) {
  auto fn = [](const std::vector<Tensor>& in) { return add(in[0], in[1]); };
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 3}), grad_input({2, 3}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(fn, {grad_input({2, 1, 3}), grad_input({4, 1}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(fn, {grad_input({3}), grad_input({2, 3}, -1, 1, 2)}));
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return in[0] + 2.5; }, {grad_input({2, 2})}));
}

TEST(Add, MatchesPyTorch) {
  Fixture f("add");
  Tensor a = f["a"].set_requires_grad(true), b = f["b"].set_requires_grad(true);
  Tensor y = a + b;
  EXPECT_TRUE(all_close(y, f["y"]));
  y.backward(f["gy"]);
  EXPECT_TRUE(all_close(a.grad(), f["ga"]));
  EXPECT_TRUE(all_close(b.grad(), f["gb"]));
}

TEST(Add, BadInput) {
  EXPECT_TRUE(throws_error(
      [] {
        add(ones({2, 3}), ones({4}));
      },
      {"add", "[2, 3]", "[4]", "broadcast"}));
  EXPECT_TRUE(throws_error([] { add(ones({2}), ones({2}, {DType::f64})); },
                           {"add", "dtype mismatch", "[2] f32 cpu", "[2] f64 cpu"}));
  EXPECT_TRUE(throws_error([] { add(ones({2}, {DType::i64}), 1.0); }, {"add", "[2] i64 cpu"}));
}

}  // namespace
}  // namespace rg
