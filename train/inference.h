#pragma once
// Running a trained model on inputs: the forward pass of evaluation (its device, precision and
// no gradients), sliding-window segmentation of inputs larger than the training crop, the
// predicted masks, and a classifier's top-k. Validation (apps/train_unet) and `predict` call
// the same functions, so a mask `predict` writes is the one validation scored.
//
// Letters: N inputs, C channels, K outputs (classes, or 1 for a binary mask), S the spatial
// sides (H, W) or (D, H, W) of an input, w those of the window.

#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor.h"
#include "nn/module.h"
#include "train/task.h"

namespace rg::train {

// x (N, C, *) f32 on the host -> the model's logits (N, K, *) f32 on the host: x goes to the
// context's device in its precision (cast under O2/O3, autocast under O1), without gradients.
Tensor infer(nn::Module& model, const Tensor& x, const StepContext& context);

struct SlidingWindow {
  std::vector<int64_t> window;  // w: {H, W} or {D, H, W}, the training crop
  double overlap = 0.25;        // neighbouring windows share this fraction of a side, in [0, 1)
  int64_t batch = 1;            // windows per forward pass
};

// The starts of the windows along one side: 0, step, 2·step, ..., the last flush with the far
// end, step = max(1, floor(window · (1 − overlap))) (MONAI's sliding_window_inference). A side
// no longer than the window has one start, 0.
std::vector<int64_t> window_starts(int64_t side, int64_t window, double overlap);

// The logits of whole inputs, window by window (MONAI's sliding_window_inference with constant
// weights): inputs (N, C, *S) f32 on the host -> (N, K, *S) f32 on the host. `forward` maps a
// batch of windows (B, C, *w) to their logits (B, K, *w) (infer() above). A side shorter than
// the window is padded with zeros to it, and the padding's logits dropped. Where windows
// overlap, their logits are averaged. The windows of all N inputs are taken in order and
// forwarded `batch` at a time: the same inputs and batch give the same logits bit for bit, and
// an input the size of the window is one forward pass of its own logits.
Tensor sliding_window_logits(const Tensor& inputs, const SlidingWindow& sw,
                             const std::function<Tensor(const Tensor&)>& forward);

// The predicted masks (N, *S) u8 of logits (N, K, *S): arg-max over K, or for K = 1 (a binary
// mask) 1 where the logit's sigmoid > 0.5 — nn/segmentation_metrics.h's rules, those of Dice.
Tensor predicted_masks(const Tensor& logits);

// The k most probable classes of each of N logits (N, K), by softmax (in f64 on the host),
// most probable first; equal probabilities keep the lower class first.
struct TopK {
  std::vector<int64_t> classes;
  std::vector<double> probabilities;
};
std::vector<TopK> top_k(const Tensor& logits, int64_t k);

}  // namespace rg::train
