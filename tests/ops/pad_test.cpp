#include <gtest/gtest.h>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

TensorFn pad_fn(std::vector<int64_t> amounts, double value) {
  return [=](const std::vector<Tensor>& in) { return pad(in[0], amounts, value); };
}

TEST(Pad, GradcheckPadAndCrop) {
  EXPECT_TRUE(gradcheck(pad_fn({1, 2, 2, 0}, 0.5), {grad_input({2, 2, 3, 2})}));         // 2-D pad
  EXPECT_TRUE(gradcheck(pad_fn({1, 0, 0, 1, 1, 1}, 0), {grad_input({1, 2, 2, 3, 2})}));  // 3-D
  EXPECT_TRUE(gradcheck(pad_fn({-1, 1, 1, -2}, 0), {grad_input({2, 4, 3})}));  // crop and pad
  EXPECT_TRUE(gradcheck(pad_fn({-1, -1}, 0), {grad_input({2, 4})}));           // crop only
}

TEST(Pad, MatchesPyTorch) {
  struct Case {
    const char* name;
    std::vector<int64_t> amounts;
    double value;
  };
  const Case cases[] = {
      {"last2", {1, 2, 0, 3}, 0.0},           {"last3", {1, 0, 2, 1, 1, 1}, 0.5},
      {"crop", {-1, 2, 1, -2}, -1.5},         {"one_dim", {2, -1}, 0.0},
      {"all_dims", {1, 1, -1, 0, 1, 0}, 2.0},
  };
  Fixture f("pad");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string n = c.name;
    Tensor x = f[n + ".x"].set_requires_grad(true);
    Tensor y = pad(x, c.amounts, c.value);
    EXPECT_TRUE(all_close(y, f[n + ".y"], 0, 0));
    y.backward(f[n + ".gy"]);
    EXPECT_TRUE(all_close(x.grad(), f[n + ".gx"], 0, 0));
  }
}

TEST(Pad, CroppedPastTheInputIsAllValueAndIntegersWork) {
  // Cropping 3 from the left of 2 elements and padding 2 on the right: nothing of x is left.
  const Tensor y = pad(from_vector<double>({1, 2}, {1, 2}), {-3, 3}, 7);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{7, 7}));
  const Tensor z = pad(from_vector<int64_t>({1, 2}, {2}, {DType::i64}), {1, 0}, 9);
  EXPECT_EQ(z.dtype(), DType::i64);
  EXPECT_EQ(z.to_vector<int64_t>(), (std::vector<int64_t>{9, 1, 2}));
}

TEST(Pad, EmptyPadIsACopy) {
  const Tensor x = from_vector<double>({1, 2, 3}, {3});
  const Tensor y = pad(x, {});
  EXPECT_EQ(y.to_vector<double>(), x.to_vector<double>());
}

TEST(Pad, BadInput) {
  EXPECT_TRUE(throws_error(
      [] {
        pad(ones({2, 3}), {1, 2, 3});
      },
      {"pad", "(left, right) pairs", "{1, 2, 3}"}));
  EXPECT_TRUE(throws_error(
      [] {
        pad(ones({3}), {1, 1, 1, 1});
      },
      {"pad", "{1, 1, 1, 1}", "2 pairs", "[3] f32 cpu", "1 dimensions"}));
  EXPECT_TRUE(throws_error(
      [] {
        pad(ones({2, 3}), {-2, -1});
      },
      {"pad", "{-2, -1}", "dimension 1", "[2, 3] f32 cpu", "size 0"}));
  EXPECT_TRUE(throws_error(
      [] {
        pad(ones({2, 3}, {DType::i64}).set_requires_grad(true), {1, 1});
      },
      {"i64"}));
}

}  // namespace
}  // namespace rg
