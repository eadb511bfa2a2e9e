// train/inference.h: where sliding windows go, that their logits are stitched and averaged at
// the right places (2-D and 3-D, padded when the input is smaller than the window), that an
// input of the window's size is one plain forward pass, masks from logits, and top-k.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/ops.h"
#include "tests/support/fixtures.h"
#include "train/inference.h"

namespace rg::train {
namespace {
using rg::testing::all_close;
using rg::testing::throws_error;

TEST(SlidingWindow, StartsCoverTheSideAndEndFlush) {
  EXPECT_EQ(window_starts(10, 4, 0.25), (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(window_starts(10, 4, 0), (std::vector<int64_t>{0, 4, 6}));
  EXPECT_EQ(window_starts(5, 4, 0.5), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(window_starts(4, 4, 0.9), (std::vector<int64_t>{0}));
  EXPECT_EQ(window_starts(3, 8, 0.25), (std::vector<int64_t>{0}));
  EXPECT_EQ(window_starts(7, 4, 0.99).size(), 4u);  // a step of at least one
  EXPECT_TRUE(throws_error([] { window_starts(7, 4, 1.0); }, {"overlap in [0, 1)"}));
}

// Each window's logits are the row and column of its top-left corner (read from the input's
// two channels, which hold each pixel's coordinates): the result at a pixel must be the mean
// of the corners of the windows that cover it.
TEST(SlidingWindow, AveragesTheWindowsThatCoverEachPixel) {
  const int64_t H = 10, W = 7;
  Tensor x = empty({2, 2, H, W});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t c = 0; c < W; ++c) {
        x.data<float>()[((n * 2 + 0) * H + y) * W + c] = static_cast<float>(y);
        x.data<float>()[((n * 2 + 1) * H + y) * W + c] = static_cast<float>(c);
      }
  int calls = 0;
  auto corner = [&](const Tensor& windows) {  // (B, 2, 4, 4) -> (B, 2, 4, 4)
    ++calls;
    EXPECT_LE(windows.size(0), 4);
    Tensor out = empty(windows.shape());
    for (int64_t b = 0; b < windows.size(0); ++b)
      for (int64_t k = 0; k < 2; ++k)
        for (int64_t i = 0; i < 16; ++i)
          out.data<float>()[(b * 2 + k) * 16 + i] = windows.data<float>()[(b * 2 + k) * 16];
    return out;
  };
  const Tensor out =
      sliding_window_logits(x, {.window = {4, 4}, .overlap = 0.25, .batch = 4}, corner);
  ASSERT_EQ(out.shape(), x.shape());
  EXPECT_EQ(calls, 3);  // 2 inputs x 3 rows x 2 columns of windows, 4 at a time
  const std::vector<int64_t> ys = window_starts(H, 4, 0.25), xs = window_starts(W, 4, 0.25);
  for (int64_t y = 0; y < H; ++y)
    for (int64_t c = 0; c < W; ++c) {
      double sy = 0, sx = 0, n = 0;
      for (int64_t y0 : ys)
        for (int64_t x0 : xs)
          if (y >= y0 && y < y0 + 4 && c >= x0 && c < x0 + 4) sy += y0, sx += x0, ++n;
      EXPECT_FLOAT_EQ(out.data<float>()[(1 * 2 + 0) * H * W + y * W + c], sy / n) << y << "," << c;
      EXPECT_FLOAT_EQ(out.data<float>()[(1 * 2 + 1) * H * W + y * W + c], sx / n) << y << "," << c;
    }
}

TEST(SlidingWindow, AnInputOfTheWindowsSizeIsOnePlainForward) {
  const Tensor x = randn({3, 2, 5, 6});
  auto model = [](const Tensor& w) { return add(mul(w.narrow(1, 0, 1), 3.0), w.narrow(1, 1, 1)); };
  const Tensor out = sliding_window_logits(x, {.window = {5, 6}, .batch = 3}, model);
  EXPECT_TRUE(all_close(out, model(x), 0, 0));
}

// Volumes, and sides shorter than the window: padded with zeros, the padding's logits dropped.
TEST(SlidingWindow, VolumesAndInputsSmallerThanTheWindow) {
  const Tensor v = randn({1, 1, 5, 9, 3});
  const Tensor out = sliding_window_logits(v, {.window = {4, 4, 4}, .overlap = 0.5, .batch = 2},
                                           [](const Tensor& w) {
                                             EXPECT_EQ(w.shape(), (Shape{w.size(0), 1, 4, 4, 4}));
                                             return w.clone();
                                           });
  EXPECT_TRUE(all_close(out, v, 1e-6, 1e-6));
  bool saw_padding = false;
  const Tensor small = rand({1, 2, 3, 5});
  const Tensor same = sliding_window_logits(small, {.window = {4, 8}}, [&](const Tensor& w) {
    const std::vector<float> px = w.to_vector<float>();
    saw_padding = px[0 * 32 + 3 * 8 + 0] == 0 && px[0 * 32 + 0 * 8 + 7] == 0;
    return w.clone();
  });
  EXPECT_TRUE(saw_padding);
  EXPECT_TRUE(all_close(same, small, 0, 0));
}

TEST(SlidingWindow, BadInputsAreNamedErrors) {
  auto id = [](const Tensor& w) { return w.clone(); };
  EXPECT_TRUE(throws_error(
      [&] {
        sliding_window_logits(zeros({2, 3, 4}), {.window = {2, 2}}, id);
      },
      {"sliding window", "(N, C, H, W)", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        sliding_window_logits(zeros({1, 1, 4, 4}, {DType::f64}), {.window = {2, 2}}, id);
      },
      {"f32 host inputs"}));
  EXPECT_TRUE(throws_error(
      [&] {
        sliding_window_logits(zeros({1, 1, 4, 4}), {.window = {2, 2}},
                              [](const Tensor& w) { return w.narrow(2, 0, 1).contiguous(); });
      },
      {"the model gave", "expected"}));
  EXPECT_TRUE(throws_error(
      [&] {
        sliding_window_logits(zeros({1, 1, 4, 4}), {.window = {2, 2}, .batch = 0}, id);
      },
      {"batch must be >= 1"}));
}

TEST(Inference, MasksFromLogits) {
  const Tensor binary = from_vector<float>({1, -1, 0.5f, -2}, {1, 1, 2, 2});
  EXPECT_EQ(predicted_masks(binary).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1, 0}));
  EXPECT_EQ(predicted_masks(binary).shape(), (Shape{1, 2, 2}));
  const Tensor three = from_vector<float>({0, 1, 2, 3, 0, 0, 9, 9}, {1, 2, 2, 2});
  EXPECT_EQ(predicted_masks(three).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 0, 1, 1}));  // a tie: 0
}

TEST(Inference, TopKByLogitWithSoftmaxProbabilities) {
  const Tensor logits = from_vector<float>({1, 3, 3, -1, 0, 0, 0, 0}, {2, 4});
  const std::vector<TopK> top = top_k(logits, 3);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].classes, (std::vector<int64_t>{1, 2, 0}));  // a tie keeps the lower first
  const double z = std::exp(1.0) + 2 * std::exp(3.0) + std::exp(-1.0);
  EXPECT_NEAR(top[0].probabilities[0], std::exp(3.0) / z, 1e-12);
  EXPECT_NEAR(top[0].probabilities[2], std::exp(1.0) / z, 1e-12);
  EXPECT_EQ(top[1].classes, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_NEAR(top[1].probabilities[0], 0.25, 1e-12);
  EXPECT_EQ(top_k(logits, 10)[0].classes.size(), 4u);
  EXPECT_TRUE(throws_error(
      [] {
        top_k(from_vector<float>({1, NAN}, {1, 2}), 1);
      },
      {"input 0", "not all finite"}));
  EXPECT_TRUE(throws_error([&] { top_k(logits, 0); }, {"k must be >= 1"}));
}

}  // namespace
}  // namespace rg::train
