#include <gtest/gtest.h>

#include <limits>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// The gradcheck and bad inputs of cast are in its spec (ops/cast/cast_spec.cpp).

TEST(Cast, GradientComesBackInTheInputDtype) {
  for (DType target : {DType::f32, DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(target));
    Tensor x = grad_input({2, 3});
    Tensor y = cast(x, target);
    EXPECT_EQ(y.dtype(), target);
    EXPECT_TRUE(y.requires_grad());
    Tensor gy = cast(from_vector<double>({1, -2, 0.5, 4, 0.25, -8}, {2, 3}), target);
    y.backward(gy);
    EXPECT_EQ(x.grad().dtype(), DType::f64);
    EXPECT_EQ(x.grad().to_vector<double>(), gy.to_vector<double>());
  }
}

TEST(Cast, AgreesWithTensorTo) {
  Tensor x = randn({3, 4}) * 100.0;
  for (DType target : {DType::f64, DType::f16, DType::bf16, DType::i64}) {
    SCOPED_TRACE(dtype_name(target));
    EXPECT_TRUE(all_close(cast(x.transpose(0, 1), target), x.transpose(0, 1).to(target), 0, 0));
  }
  Tensor small = rand({5}) * 200.0;  // (out of range: OutOfRangeToIntegersAsPyTorch)
  EXPECT_TRUE(all_close(cast(small, DType::u8), small.to(DType::u8), 0, 0));
  EXPECT_TRUE(cast(x, DType::f32).same_as(x));  // same dtype: x itself, as torch's x.to()
}

TEST(Cast, IntegerTargetsAreNotDifferentiable) {
  Tensor x = from_vector<double>({-2.7, -0.5, 0.5, 3.9}, {4}, {DType::f64});
  x.set_requires_grad(true);
  Tensor y = cast(x, DType::i64);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{-2, 0, 0, 3}));  // toward zero
  EXPECT_FALSE(cast(x, DType::u8).requires_grad());
}

// Out of an integer type's range: PyTorch's results on a CPU (torch 2.x, x86), which are defined
// behaviour here on every compiler (a float straight to u8 below 0 is undefined in C++; UBSan
// found it): truncation through int64, so -2.7 -> 254 and 300.7 -> 44; NaN and values outside
// int64 -> INT64_MIN (u8: 0).
TEST(Cast, OutOfRangeToIntegersAsPyTorch) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x =
      from_vector<double>({-2.7, -0.5, 300.7, 255.9, nan, 1e30, -1e30}, {7}, {DType::f64});
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  for (DType from : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    const Tensor source = x.to(from);
    EXPECT_EQ(cast(source, DType::i64).to_vector<int64_t>()[4], kMin) << from;
    EXPECT_EQ(cast(source, DType::u8).to_vector<uint8_t>()[0], 254) << from;
  }
  EXPECT_EQ(cast(x, DType::u8).to_vector<uint8_t>(),
            (std::vector<uint8_t>{254, 0, 44, 255, 0, 0, 0}));
  EXPECT_EQ(cast(x, DType::i64).to_vector<int64_t>(),
            (std::vector<int64_t>{-2, 0, 300, 255, kMin, kMin, kMin}));
  EXPECT_EQ(cast(x.to(DType::f16), DType::u8).to_vector<uint8_t>(),
            (std::vector<uint8_t>{254, 0, 44, 255, 0, 0, 0}));  // 300.7 is 300.75 in f16
}

TEST(Cast, MatchesPyTorch) {
  Fixture f("cast");
  Tensor x = f["x"];
  // Conversions are exact operations: compare bit for bit.
  EXPECT_TRUE(all_close(cast(x, DType::f16), f["f16"], 0, 0));
  EXPECT_TRUE(all_close(cast(x, DType::bf16), f["bf16"], 0, 0));
  EXPECT_TRUE(all_close(cast(x, DType::f64), f["f64"], 0, 0));
  EXPECT_TRUE(all_close(cast(x, DType::i64), f["i64"], 0, 0));
  EXPECT_EQ(cast(x, DType::f16).dtype(), f["f16"].dtype());
  for (std::string c : {"f64", "f16", "bf16"}) {
    SCOPED_TRACE(c);
    Tensor xs = f["x"].detach().set_requires_grad(true);  // a fresh leaf per case
    Tensor y = cast(xs, dtype_from_name(c));
    y.backward(f["back_" + c + ".gy"]);
    EXPECT_TRUE(all_close(xs.grad(), f["back_" + c + ".gx"], 0, 0));
  }
  Tensor xd = f["d.x"].set_requires_grad(true);
  Tensor y = cast(xd, DType::f32);
  EXPECT_TRUE(all_close(y, f["d.y"], 0, 0));
  y.backward(f["d.gy"]);
  EXPECT_TRUE(all_close(xd.grad(), f["d.gx"], 0, 0));
}

}  // namespace
}  // namespace rg
