// nll_loss and cross_entropy's GPU kernels (ops/nll_loss/nll_loss_kernels.cuh,
// ops/cross_entropy/cross_entropy_kernels.cuh) run through the emulator against the CPU kernels,
// forward and backward: every dtype and reduction, with and without class weights, ignored
// targets and label smoothing; lanes as rows (a thread per lane, and a block per lane for long
// rows) and as pixels of (N, C, H, W). Sums differ in order: device_parity_tolerance.
#include <gtest/gtest.h>

#include "ops/cross_entropy/cross_entropy_kernels.cuh"
#include "ops/nll_loss/nll_loss_kernels.cuh"
#include "ops/ops.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

constexpr int64_t kIgnore = 1;  // a valid class index: ignoring must not depend on range

struct Case {
  Shape input;  // (N, C, ...) or (C)
  bool weighted;
  double smoothing;
};

// Rows with few classes (a thread per lane), rows past kBlockLaneClasses (a block per lane),
// pixels of (N, C, H, W), and one unbatched sample.
const Case kCases[] = {{{5, 7}, false, 0.0},    {{3, 70}, true, 0.1}, {{2, 3, 2, 3}, true, 0.0},
                       {{2, 4, 5}, false, 0.2}, {{9}, false, 0.0},    {{3, 130}, false, 0.0}};

Tensor logits_for(const Shape& shape, DType dtype) {
  return mul(add(rand(shape, {DType::f64}), -0.5), 8.0).to(dtype);
}

// Targets cycling through the classes, so every case has some lanes on kIgnore.
Tensor targets_for(const Shape& input) {
  Shape shape = input;
  const int64_t classes = shape.size() == 1 ? shape[0] : shape[1];
  shape.erase(shape.begin() + (shape.size() == 1 ? 0 : 1));
  std::vector<int64_t> t(static_cast<std::size_t>(numel_of(shape)));
  for (std::size_t n = 0; n < t.size(); ++n) t[n] = static_cast<int64_t>((n * 5 + 2) % classes);
  return from_vector<int64_t>(t, shape, {DType::i64});
}

detail::CrossEntropyArgs args_for(const Case& c, Reduction reduction) {
  detail::CrossEntropyArgs args;
  args.lanes = lanes_around(c.input, c.input.size() == 1 ? 0 : 1);
  args.reduction = reduction;
  args.ignore_index = kIgnore;
  args.label_smoothing = c.smoothing;
  return args;
}

Tensor gradient_for(const Tensor& loss) {
  return add(rand(loss.shape(), {DType::f64}), 0.5).to(loss.dtype());
}

constexpr Reduction kReductions[] = {Reduction::none, Reduction::sum, Reduction::mean};

TEST(ClassLossKernels, NllLossMatchesTheCpu) {
  for (DType dtype : kFloatingDtypes)
    for (const Case& c : kCases)
      for (Reduction reduction : kReductions) {
        const double tol = device_parity_tolerance(dtype);
        const Tensor x = logits_for(c.input, dtype), target = targets_for(c.input);
        const int64_t classes = c.input.size() == 1 ? c.input[0] : c.input[1];
        const Tensor weight =
            c.weighted ? add(rand({classes}, {DType::f64}), 0.5).to(dtype) : Tensor();
        const detail::CrossEntropyArgs args = args_for(c, reduction);
        const auto expected = detail::nll_loss_forward(OnCpu{}, x, target, weight, args);
        const auto got = launch_nll_loss(x, target, weight, args, nullptr);
        const std::string what = std::string(dtype_name(dtype)) + " " + shape_str(c.input);
        EXPECT_TRUE(all_close(got.loss, expected.loss, tol, tol)) << what;
        EXPECT_NEAR(got.total_weight.item(), expected.total_weight.item(), 1e-12) << what;

        const Tensor gy = gradient_for(expected.loss);
        const Tensor expected_gx = detail::nll_loss_backward(OnCpu{}, gy, target, weight, c.input,
                                                             args, expected.total_weight);
        const Tensor gx = empty(c.input, {dtype});
        launch_nll_loss_backward(gy, target, weight, got.total_weight, gx, args, nullptr);
        EXPECT_TRUE(all_close(gx, expected_gx, tol, tol)) << "backward " << what;
      }
}

TEST(ClassLossKernels, CrossEntropyMatchesTheCpu) {
  for (DType dtype : kFloatingDtypes)
    for (const Case& c : kCases)
      for (Reduction reduction : kReductions) {
        const double tol = device_parity_tolerance(dtype);
        const Tensor x = logits_for(c.input, dtype), target = targets_for(c.input);
        const int64_t classes = c.input.size() == 1 ? c.input[0] : c.input[1];
        const Tensor weight =
            c.weighted ? add(rand({classes}, {DType::f64}), 0.5).to(dtype) : Tensor();
        const detail::CrossEntropyArgs args = args_for(c, reduction);
        const auto expected = detail::cross_entropy_forward(OnCpu{}, x, target, weight, args);
        const auto got = launch_cross_entropy(x, target, weight, args, nullptr);
        const std::string what = std::string(dtype_name(dtype)) + " " + shape_str(c.input);
        EXPECT_TRUE(all_close(got.reduced.loss, expected.reduced.loss, tol, tol)) << what;
        EXPECT_TRUE(all_close(got.lse, expected.lse, 1e-5, 1e-5)) << what;
        EXPECT_NEAR(got.reduced.total_weight.item(), expected.reduced.total_weight.item(), 1e-12)
            << what;

        const Tensor gy = gradient_for(expected.reduced.loss);
        const Tensor expected_gx = detail::cross_entropy_backward(
            OnCpu{}, gy, x, target, weight, expected.lse, args, expected.reduced.total_weight);
        const Tensor gx = empty(c.input, {dtype});
        launch_cross_entropy_backward(gy, x, target, weight, got.lse, got.reduced.total_weight, gx,
                                      args, nullptr);
        EXPECT_TRUE(all_close(gx, expected_gx, tol, tol)) << "backward " << what;
      }
}

TEST(ClassLossKernels, OutOfRangeTargetsAreNamed) {
  // The kernels skip bad lanes and report the first one; ignored lanes are not bad.
  const Tensor x = logits_for({4, 3}, DType::f32);
  const Tensor target = from_vector<int64_t>({-100, 2, 7, -1}, {4}, {DType::i64});
  detail::CrossEntropyArgs args;
  args.lanes = lanes_around({4, 3}, 1);
  args.ignore_index = -100;
  EXPECT_TRUE(throws_error([&] { launch_nll_loss(x, target, Tensor(), args, nullptr); },
                           {"nll_loss", "target 7", "C = 3"}));
  EXPECT_TRUE(throws_error([&] { launch_cross_entropy(x, target, Tensor(), args, nullptr); },
                           {"cross_entropy", "target 7", "C = 3"}));
  const Tensor fine = from_vector<int64_t>({-100, 2, 0, 1}, {4}, {DType::i64});
  EXPECT_NO_THROW(launch_cross_entropy(x, fine, Tensor(), args, nullptr));
}

}  // namespace
}  // namespace rg
