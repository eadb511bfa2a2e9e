#include "nn/dice_loss.h"

#include <string>

#include "core/autograd.h"

namespace rg::nn {

namespace {

// Elements of t outside [lo, hi], counted on t's device; one scalar comes back to the host.
// Exact for the values a mask or a class index holds (small integers, or values in [0, 1]).
bool any_outside(const Tensor& t, double lo, double hi) {
  NoGradGuard no_grad;
  const Tensor tf = t.to(DType::f64);
  return sum(relu(sub(lo, tf)) + relu(add(tf, -hi))).item() > 0;
}

}  // namespace

Tensor one_hot(const Tensor& target, int64_t num_classes, DType dtype) {
  RG_CHECK(target.defined() && target.dtype() == DType::i64 && target.dim() >= 1,
           "one_hot: expected a target of i64 class indices (N, *), got ",
           target.defined() ? target.describe() : std::string("an undefined tensor"));
  RG_CHECK(num_classes >= 1, "one_hot: num_classes must be positive, got ", num_classes);
  NoGradGuard no_grad;
  // t: (N, 1, *), classes: (1, C, 1, ..., 1); their difference broadcasts to (N, C, *).
  const Tensor t = target.to(dtype).unsqueeze(1);
  Shape class_shape(static_cast<std::size_t>(t.dim()), 1);
  class_shape[1] = num_classes;
  const Tensor classes =
      arange(0, static_cast<double>(num_classes), 1, {dtype, target.device()}).view(class_shape);
  const Tensor d = sub(t, classes);
  return relu(sub(1.0, mul(d, d)));
}

Tensor soft_dice_loss(const Tensor& logits, const Tensor& target, double smooth) {
  RG_CHECK(logits.defined() && target.defined(), "soft_dice_loss: undefined input");
  RG_CHECK(is_floating(logits.dtype()) && logits.dim() >= 2 && logits.size(1) >= 1,
           "soft_dice_loss: expected floating logits (N, C, *), got ", logits.describe());
  Shape expected = logits.shape();
  expected.erase(expected.begin() + 1);
  RG_CHECK(target.dtype() == DType::i64 && target.shape() == expected,
           "soft_dice_loss: expected a target of i64 class indices shaped as the logits without "
           "their class dim (N, *), got logits ",
           logits.describe(), " and target ", target.describe());
  RG_CHECK(target.device() == logits.device(), "soft_dice_loss: logits ", logits.describe(),
           " and target ", target.describe(), " are on different devices");
  RG_CHECK(smooth >= 0, "soft_dice_loss: smooth must be >= 0, got ", smooth);
  const int64_t C = logits.size(1);
  RG_CHECK(!any_outside(target, 0, static_cast<double>(C - 1)), "soft_dice_loss: target ",
           target.describe(), " holds class indices outside [0, ", C, ") for logits ",
           logits.describe());
  // Sums over the batch and every position: all dims but the class dim.
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < logits.dim(); ++d) dims.push_back(d);
  const Tensor p = softmax(logits, 1);
  const Tensor t = one_hot(target, C, logits.dtype());
  const Tensor intersection = sum(mul(p, t), dims);            // (C)
  const Tensor denominator = add(sum(p, dims), sum(t, dims));  // (C)
  const Tensor dice = div(add(mul(intersection, 2.0), smooth), add(denominator, smooth));
  return mean(sub(1.0, dice));
}

Tensor bce_dice_loss(const Tensor& logits, const Tensor& target) {
  RG_CHECK(logits.defined() && target.defined(), "bce_dice_loss: undefined input");
  RG_CHECK(
      is_floating(logits.dtype()) && logits.dim() >= 1 && logits.size(0) >= 1 && logits.numel() > 0,
      "bce_dice_loss: expected non-empty floating logits (N, *), got ", logits.describe());
  RG_CHECK(target.dtype() == logits.dtype() && target.shape() == logits.shape() &&
               target.device() == logits.device(),
           "bce_dice_loss: expected a target of the logits' shape, dtype and device, got logits ",
           logits.describe(), " and target ", target.describe());
  RG_CHECK(!any_outside(target, 0, 1), "bce_dice_loss: target ", target.describe(),
           " holds values outside [0, 1] (a mask, soft or hard)");
  // pytorch-nested-unet: smooth = 1e-5, per-sample Dice over the flattened sample.
  constexpr double smooth = 1e-5;
  const int64_t N = logits.size(0);
  const Tensor bce = binary_cross_entropy_with_logits(logits, target);
  const Tensor p = sigmoid(logits).reshape({N, -1});
  const Tensor t = target.reshape({N, -1});
  const Tensor intersection = sum(mul(p, t), {1});  // (N)
  const Tensor dice =
      div(add(mul(intersection, 2.0), smooth), add(add(sum(p, {1}), sum(t, {1})), smooth));
  return add(mul(bce, 0.5), sub(1.0, div(sum(dice), static_cast<double>(N))));
}

}  // namespace rg::nn
