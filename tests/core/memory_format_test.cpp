// Memory formats (core/memory_format.h): the channels-last strides, the layout checks, the
// differentiable conversion, and the pointwise ops and copies that keep a channels-last input
// channels-last, with the values and gradients of the NCHW path.
#include <gtest/gtest.h>

#include "core/tensor.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using testing::throws_error;

constexpr MemoryFormat kCl = MemoryFormat::channels_last;

// (N, C, H, W) = (2, 3, 4, 5), values i·0.25 − 7 in NCHW order.
Tensor nchw(DType dtype = DType::f32) {
  return add(mul(arange(0, 120, 1, {DType::f64}).reshape({2, 3, 4, 5}), 0.25), -7.0).to(dtype);
}

TEST(MemoryFormat, ChannelsLastStridesPutTheChannelsInnermost) {
  EXPECT_EQ(strides_for({2, 3, 4, 5}, MemoryFormat::contiguous), (Shape{60, 20, 5, 1}));
  EXPECT_EQ(strides_for({2, 3, 4, 5}, kCl), (Shape{60, 1, 15, 3}));
  EXPECT_EQ(strides_for({2, 3, 4, 5, 6}, MemoryFormat::channels_last_3d),
            (Shape{360, 1, 90, 18, 3}));
  const Tensor t = empty({2, 3, 4, 5}, {}, kCl);
  EXPECT_EQ(t.strides(), (Shape{60, 1, 15, 3}));
  EXPECT_TRUE(t.is_contiguous(kCl));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_FALSE(t.is_contiguous(MemoryFormat::contiguous));
  EXPECT_EQ(t.suggest_memory_format(), kCl);
  EXPECT_EQ(empty({2, 3, 4, 5}).suggest_memory_format(), MemoryFormat::contiguous);
  // A transposed view is dense in no format: the suggestion is contiguous.
  const Tensor odd = empty({2, 3, 5, 4}).transpose(2, 3);
  EXPECT_FALSE(odd.is_contiguous(kCl));
  EXPECT_EQ(odd.suggest_memory_format(), MemoryFormat::contiguous);
  EXPECT_EQ(memory_format_name(kCl), "channels_last");
  EXPECT_EQ(parse_memory_format("channels_last"), kCl);
  EXPECT_EQ(parse_memory_format("contiguous"), MemoryFormat::contiguous);
}

TEST(MemoryFormat, SizeOneDimsMakeBothFormatsTrue) {
  // One channel, or a 1 × 1 image: NCHW and NHWC are the same bytes, as in PyTorch.
  for (const Shape& shape : {Shape{2, 1, 4, 5}, Shape{2, 3, 1, 1}}) {
    const Tensor t = empty(shape);
    EXPECT_TRUE(t.is_contiguous(kCl)) << shape_str(shape);
    EXPECT_EQ(t.suggest_memory_format(), MemoryFormat::contiguous) << shape_str(shape);
    EXPECT_TRUE(empty(shape, {}, kCl).is_contiguous()) << shape_str(shape);
  }
  EXPECT_TRUE(empty({0, 3, 4, 5}, {}, kCl).is_contiguous(kCl));
}

TEST(MemoryFormat, BadInputIsAClearError) {
  EXPECT_TRUE(throws_error(
      [] {
        empty({2, 3, 4}, {}, kCl);
      },
      {"empty", "channels_last needs a 4-D", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error([] { ones({2, 3}).contiguous(kCl); }, {"channels_last", "[2, 3]"}));
  EXPECT_TRUE(throws_error(
      [] {
        empty({2, 3, 4, 5}, {}, MemoryFormat::channels_last_3d);
      },
      {"channels_last_3d needs a 5-D"}));
  EXPECT_TRUE(
      throws_error([] { parse_memory_format("nhwc"); }, {"'nhwc'", "contiguous, channels_last"}));
  // A rank the format lacks is simply not in it (no error from a query).
  EXPECT_FALSE(ones({2, 3}).is_contiguous(kCl));
}

TEST(MemoryFormat, ConversionKeepsValuesAndIsSelfWhenAlreadyThere) {
  const Tensor x = nchw();
  const Tensor y = x.contiguous(kCl);
  EXPECT_EQ(y.shape(), x.shape());
  EXPECT_EQ(y.strides(), (Shape{60, 1, 15, 3}));
  EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
  // Memory order is N, H, W, C: element (0, 1, 0, 0) sits right after (0, 0, 0, 0).
  EXPECT_EQ(y.data<float>()[1], x.to_vector<float>()[20]);
  EXPECT_TRUE(y.contiguous(kCl).same_as(y));
  EXPECT_TRUE(to_memory_format(y, kCl).same_as(y));
  const Tensor back = y.contiguous();
  EXPECT_TRUE(back.is_contiguous());
  EXPECT_EQ(back.to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(y.contiguous(MemoryFormat::contiguous).to_vector<float>(), x.to_vector<float>());
}

TEST(MemoryFormat, GradientsComeBackInTheInputsFormat) {
  const Tensor w = mul(nchw(), 0.5);
  // An NCHW leaf converted to NHWC: its gradient is NCHW.
  Tensor a = nchw().detach().set_requires_grad();
  sum(mul(to_memory_format(a, kCl), w)).backward();
  ASSERT_TRUE(a.grad().defined());
  EXPECT_TRUE(a.grad().is_contiguous());
  EXPECT_EQ(a.grad().to_vector<float>(), w.to_vector<float>());
  // An NHWC leaf converted to NCHW: its gradient is NHWC, with the same values.
  Tensor b = nchw().contiguous(kCl).detach().set_requires_grad();
  sum(mul(b.contiguous(), w)).backward();
  ASSERT_TRUE(b.grad().defined());
  EXPECT_EQ(b.grad().suggest_memory_format(), kCl);
  EXPECT_EQ(b.grad().to_vector<float>(), w.to_vector<float>());
  // Two uses, one gradient in each layout: accumulated into the leaf's channels-last buffer.
  Tensor c = nchw().contiguous(kCl).detach().set_requires_grad();
  add(sum(mul(c.contiguous(), w)), sum(mul(c, w))).backward();
  EXPECT_EQ(c.grad().suggest_memory_format(), kCl);
  EXPECT_EQ(c.grad().to_vector<float>(), mul(w, 2.0).to_vector<float>());
}

// gradcheck perturbs its (contiguous) inputs in memory order: the conversions run inside.
TEST(MemoryFormat, ConversionGradchecks) {
  Tensor x = mul(nchw(DType::f64), 0.1).detach().set_requires_grad();
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) {
        return mul(to_memory_format(in[0], kCl), in[0]).contiguous();
      },
      {x}));
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) {
        return rg::tanh(to_memory_format(in[0], kCl).contiguous(kCl).contiguous());
      },
      {x}));
}

TEST(MemoryFormat, PointwiseOpsKeepChannelsLast) {
  const Tensor x = nchw();
  const Tensor x_cl = x.contiguous(kCl);
  const Tensor bias = from_vector<float>({1, -2, 3}, {1, 3, 1, 1});
  struct Case {
    const char* name;
    Tensor nchw, channels_last;
  };
  const std::vector<Case> cases = {
      {"relu", relu(x), relu(x_cl)},
      {"add bias", add(x, bias), add(x_cl, bias)},
      {"mul same layout", mul(x, x), mul(x_cl, x_cl)},
      {"sub scalar", sub(x, 2.0), sub(x_cl, 2.0)},
      {"gelu", gelu(x), gelu(x_cl)},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.channels_last.suggest_memory_format(), kCl) << c.name;
    EXPECT_EQ(c.channels_last.to_vector<float>(), c.nchw.to_vector<float>()) << c.name;
  }
  // Mixed layouts: the first input with the whole shape decides, as PyTorch's TensorIterator.
  EXPECT_TRUE(add(x, x_cl).is_contiguous());
  EXPECT_EQ(add(x_cl, x).suggest_memory_format(), kCl);
  EXPECT_EQ(add(bias, x_cl).suggest_memory_format(), kCl);
  EXPECT_EQ(add(x_cl, x).to_vector<float>(), add(x, x).to_vector<float>());
}

TEST(MemoryFormat, PointwiseGradientsStayChannelsLast) {
  Tensor a = nchw().contiguous(kCl).detach().set_requires_grad();
  Tensor b = nchw().detach().set_requires_grad();
  const Tensor bias = from_vector<float>({1, -2, 3}, {1, 3, 1, 1});
  sum(mul(relu(add(a, bias)), a)).backward();
  sum(mul(relu(add(b, bias)), b)).backward();
  EXPECT_EQ(a.grad().suggest_memory_format(), kCl);
  EXPECT_EQ(a.grad().to_vector<float>(), b.grad().to_vector<float>());
}

TEST(MemoryFormat, CopiesKeepChannelsLast) {
  const Tensor x_cl = nchw().contiguous(kCl);
  for (DType dtype : {DType::f64, DType::bf16, DType::f16}) {
    const Tensor y = x_cl.to(dtype);
    EXPECT_TRUE(y.is_contiguous(kCl)) << dtype;
    EXPECT_EQ(y.to_vector<float>(), nchw().to(dtype).to_vector<float>()) << dtype;
    EXPECT_EQ(y.to(DType::f32).suggest_memory_format(), kCl) << dtype;
  }
  // Another (logical) device: the bytes cross as they are.
  const Tensor moved = x_cl.to(Device::cpu(1));
  EXPECT_EQ(moved.device(), Device::cpu(1));
  EXPECT_TRUE(moved.is_contiguous(kCl));
  EXPECT_EQ(moved.to_vector<float>(), nchw().to_vector<float>());
  // clone() is documented contiguous, whatever the source.
  EXPECT_TRUE(x_cl.clone().is_contiguous());
}

}  // namespace
}  // namespace rg
