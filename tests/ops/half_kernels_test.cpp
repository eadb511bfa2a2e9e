// f16 / bf16 kernels of conv2d, conv_transpose2d, linear and matmul: each computes in f32 (as
// cuDNN and cuBLAS do for mixed precision) and rounds once. Gradcheck cannot run in 16 bits, so
// each result is compared with the same op in f64 on the same (exactly widened) 16-bit
// operands, y64, and with S, the op in f64 on their absolute values (each output's sum of
// |terms|):
//   |y16 − y64| <= u·|y64| + 2⁻¹²·S + tiny,   u = the unit roundoff, eps/2 (f16: 2⁻¹¹, bf16: 2⁻⁸),
// the bound of one correct rounding of an f32 sum: a K-term sum in f32 errs by at most K·2⁻²⁴·S
// (K <= 4096 here; Winograd's transforms stay within it), and `tiny` (the smallest subnormal,
// f16 2⁻²⁴) covers results that round into the subnormal range. The f32 op is no reference:
// the 16-bit kernels need not sum in its order (bf16 runs on AMX tiles where the CPU has them,
// f32 on Winograd), and two f32 sums of a cancelling result can differ by more than one 16-bit
// rounding of it. A kernel that accumulated in 16 bits would miss this by far: a K-term sum in
// 16 bits errs by up to about K·u·S.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/autograd.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

double unit_roundoff(DType dt) {
  return dt == DType::f16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
}
double tiny(DType dt) {
  return dt == DType::f16 ? std::ldexp(1.0, -24) : 1e-38;
}

// Within one rounding of an f32 sum of the exact result y64 (see the top of the file).
::testing::AssertionResult one_rounding(const Tensor& y16, const Tensor& y64, const Tensor& s,
                                        DType dt) {
  if (y16.dtype() != dt || y16.shape() != y64.shape())
    return ::testing::AssertionFailure() << "got " << y16.describe() << ", want " << y64.describe();
  const std::vector<double> a = y16.to_vector<double>(), r = y64.to_vector<double>();
  const std::vector<double> abs_sum = s.to_vector<double>();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double tol = unit_roundoff(dt) * std::abs(r[i]) + std::ldexp(abs_sum[i], -12) + tiny(dt);
    if (!(std::abs(a[i] - r[i]) <= tol))
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << ", exact " << r[i]
                                           << " (tolerance " << tol << ")";
  }
  return ::testing::AssertionSuccess();
}

Tensor abs_of(const Tensor& t) {
  std::vector<double> v = t.to_vector<double>();
  for (double& e : v) e = std::abs(e);
  return from_vector(v, t.shape(), {DType::f64});
}

// Runs op forward and backward on 16-bit leaves, on f64 leaves holding the same values and on
// f64 leaves holding their absolute values; the output and every input gradient must be one
// rounding of an f32 sum away from the f64 result.
void check_op(const std::function<Tensor(const std::vector<Tensor>&)>& op,
              const std::vector<Shape>& shapes, DType dt) {
  std::vector<Tensor> in16, in64, abs64;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    Tensor v = randn(shapes[i]).to(dt);  // the 16-bit values; widening them is exact
    in16.push_back(v.clone().set_requires_grad(true));
    in64.push_back(v.to(DType::f64).set_requires_grad(true));
    abs64.push_back(abs_of(v).set_requires_grad(true));
  }
  Tensor y16 = op(in16), y64 = op(in64), s = op(abs64);
  EXPECT_TRUE(one_rounding(y16, y64, s, dt));
  // The same upstream gradient in every run (16-bit values, exact in f64; absolute values for S).
  const Tensor gy = randn(y64.shape()).to(dt);
  y16.backward(gy);
  y64.backward(gy.to(DType::f64));
  s.backward(abs_of(gy));
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    SCOPED_TRACE("gradient of input " + std::to_string(i));
    // The backward runs on the saved 16-bit values, which the f64 runs also saw.
    EXPECT_TRUE(one_rounding(in16[i].grad(), in64[i].grad(), abs64[i].grad(), dt));
  }
}

class HalfKernels : public ::testing::TestWithParam<DType> {};

TEST_P(HalfKernels, Conv2dIsOneRoundingFromF32) {
  const DType dt = GetParam();
  for (Conv2dPair stride : {Conv2dPair{1, 1}, Conv2dPair{2, 2}}) {
    SCOPED_TRACE("stride " + std::to_string(stride[0]));
    check_op(
        [&](const std::vector<Tensor>& t) {
          return conv2d(t[0], t[1], t[2], stride, {1, 1});
        },
        {{2, 8, 9, 9}, {6, 8, 3, 3}, {6}}, dt);
  }
  // The direct (wide-image) kernel path too.
  check_op(
      [](const std::vector<Tensor>& t) {
        return conv2d(t[0], t[1], Tensor(), {1, 1}, {1, 1});
      },
      {{2, 16, 32, 32}, {16, 16, 3, 3}}, dt);
}

TEST_P(HalfKernels, ConvTranspose2dIsOneRoundingFromF32) {
  const DType dt = GetParam();
  check_op(
      [](const std::vector<Tensor>& t) {
        return conv_transpose2d(t[0], t[1], t[2], {2, 2}, {1, 1}, {1, 1});
      },
      {{2, 6, 5, 5}, {6, 4, 3, 3}, {4}}, dt);
}

TEST_P(HalfKernels, LinearAndMatmulAreOneRoundingFromF32) {
  const DType dt = GetParam();
  check_op([](const std::vector<Tensor>& t) { return linear(t[0], t[1], t[2]); },
           {{5, 3, 40}, {7, 40}, {7}}, dt);
  check_op([](const std::vector<Tensor>& t) { return matmul(t[0], t[1]); },
           {{3, 6, 50}, {3, 50, 4}}, dt);
}

TEST_P(HalfKernels, ConvBiasGradientIsOneRoundingOfTheF64Sum) {
  const DType dt = GetParam();
  const Tensor gy = randn({4, 3, 7, 7}).to(dt);
  const Tensor exact = sum(gy.to(DType::f64), {0, 2, 3});
  // A single rounding from the f64 sum: equal to converting that sum, bit for bit.
  EXPECT_TRUE(all_close(conv_backward_bias<2>(gy), exact.to(dt), 0, 0));
}

TEST_P(HalfKernels, BadInputsStillNameTheOp) {
  const DType dt = GetParam();
  EXPECT_TRUE(throws_error(
      [&] {
        conv2d(ones({1, 2, 5, 5}, {dt}), ones({3, 2, 3, 3}));
      },
      {"conv2d", "dtype mismatch", std::string(dtype_name(dt))}));
  EXPECT_TRUE(throws_error(
      [&] {
        linear(ones({2, 4}, {dt}), ones({3, 4}));
      },
      {"linear", "dtype mismatch"}));
  EXPECT_TRUE(throws_error(
      [&] {
        matmul(ones({2, 4}, {dt}), ones({4, 3}, {DType::f64}));
      },
      {"matmul", "dtype mismatch"}));
}

INSTANTIATE_TEST_SUITE_P(F16AndBf16, HalfKernels, ::testing::Values(DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Against PyTorch's 16-bit conv2d on the same 16-bit operands (ops/conv/conv2d_half_fixture.py):
// both round their f32-accumulated result once, and those f32 results differ only in summation
// order, so the two 16-bit values are at most one 16-bit ulp (2u relative) apart — plus 1e-4
// for results so close to zero that the f32 summation-order difference outweighs their ulp.
// f16 gradients are compared only with ringgrad's own f32 op (above): PyTorch's CPU f16 conv
// backward accumulates in 16 bits and is no reference.
TEST(Conv2dHalf, MatchesPyTorch) {
  Fixture f("conv2d_half");
  struct Case {
    const char* name;
    int64_t stride, padding;
  };
  for (const Case& c :
       {Case{"basic", 1, 1}, Case{"direct", 1, 1}, Case{"s2", 2, 1}, Case{"small", 1, 1}}) {
    for (const char* tag : {"f16", "bf16"}) {
      const std::string key = std::string(tag) + "." + c.name;
      SCOPED_TRACE(key);
      const DType dt = tag == std::string("f16") ? DType::f16 : DType::bf16;
      const double rtol = 2 * unit_roundoff(dt), atol = 1e-4;
      const bool has_bias = f.has(key + ".b");
      Tensor x = f[key + ".x"].set_requires_grad(true);
      Tensor w = f[key + ".w"].set_requires_grad(true);
      Tensor b = has_bias ? f[key + ".b"].set_requires_grad(true) : Tensor();
      ASSERT_EQ(x.dtype(), dt);
      Tensor y = conv2d(x, w, b, {c.stride, c.stride}, {c.padding, c.padding});
      EXPECT_TRUE(all_close(y, f[key + ".y"], atol, rtol));
      if (dt == DType::f16) continue;
      y.backward(f[key + ".gy"]);
      EXPECT_TRUE(all_close(x.grad(), f[key + ".gx"], atol, rtol));
      EXPECT_TRUE(all_close(w.grad(), f[key + ".gw"], atol, rtol));
      if (has_bias) {
        EXPECT_TRUE(all_close(b.grad(), f[key + ".gb"], atol, rtol));
      }
    }
  }
}

}  // namespace
}  // namespace rg
