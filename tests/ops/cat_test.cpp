#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TEST(Cat, GradcheckDims0_1AndLastWithDifferingSizes) {
  auto fn = [](int64_t dim) { return [=](const std::vector<Tensor>& in) { return cat(in, dim); }; };
  EXPECT_TRUE(gradcheck(fn(0), {grad_input({2, 3}, -1, 1, 1), grad_input({1, 3}, -1, 1, 2),
                                grad_input({3, 3}, -1, 1, 3)}));
  EXPECT_TRUE(gradcheck(fn(1), {grad_input({2, 1, 2}, -1, 1, 1), grad_input({2, 3, 2}, -1, 1, 2)}));
  EXPECT_TRUE(
      gradcheck(fn(-1), {grad_input({2, 2, 1}, -1, 1, 1), grad_input({2, 2, 3}, -1, 1, 2)}));
  // An input that does not require grad, and the same tensor twice (gradients add up).
  Tensor a = grad_input({2, 2}, -1, 1, 4);
  Tensor c = rand({2, 1}, {DType::f64});
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        return cat({in[0], c, in[0]}, 1);
      },
      {a}));
}

TEST(Cat, MatchesPyTorch) {
  struct Case {
    const char* name;
    int64_t dim;
    int inputs;
  };
  const Case cases[] = {{"dim0", 0, 3}, {"dim1", 1, 2}, {"dimlast", -1, 3}};
  Fixture f("cat");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string n = c.name;
    std::vector<Tensor> xs;
    for (int k = 0; k < c.inputs; ++k)
      xs.push_back(f[n + ".x" + std::to_string(k)].set_requires_grad(true));
    Tensor y = cat(xs, c.dim);
    EXPECT_TRUE(all_close(y, f[n + ".y"], 0, 0));
    y.backward(f[n + ".gy"]);
    for (int k = 0; k < c.inputs; ++k)
      EXPECT_TRUE(all_close(xs[k].grad(), f[n + ".gx" + std::to_string(k)], 0, 0));
  }
}

TEST(Cat, IntegersNonContiguousAndEmptyPieces) {
  Tensor a = from_vector<int64_t>({1, 2, 3, 4}, {2, 2}, {DType::i64});
  Tensor y = cat({a, a.transpose(0, 1), empty({0, 2}, {DType::i64})}, 0);
  EXPECT_EQ(y.shape(), (Shape{4, 2}));
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, 1, 3, 2, 4}));
}

TEST(Cat, BadInput) {
  EXPECT_TRUE(throws_error([] { cat({}, 0); }, {"cat", "non-empty"}));
  EXPECT_TRUE(throws_error(
      [] {
        cat({ones({2, 3}), ones({2, 4})}, 0);
      },
      {"cat", "[2, 3] f32 cpu", "[2, 4] f32 cpu", "dim 1"}));
  EXPECT_TRUE(throws_error(
      [] {
        cat({ones({2, 3}), ones({2, 3, 1})}, 0);
      },
      {"cat", "number of dims", "[2, 3, 1]"}));
  EXPECT_TRUE(throws_error(
      [] {
        cat({ones({2}), ones({2}, {DType::f64})}, 0);
      },
      {"cat", "dtype mismatch", "[2] f32 cpu", "[2] f64 cpu"}));
  EXPECT_TRUE(throws_error([] { cat({ones({2}), ones({2})}, 1); }, {"dim"}));
  EXPECT_TRUE(throws_error(
      [] {
        cat({scalar_tensor(1), scalar_tensor(2)}, 0);
      },
      {"cat", "zero-dimensional"}));
}

}  // namespace
}  // namespace rg
