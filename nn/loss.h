#pragma once
// Losses as objects that remember their options, for code that passes a criterion around
// (PyTorch's nn.CrossEntropyLoss and friends). Each calls the op of the same name.

#include "ops/ops.h"

namespace rg::nn {

struct CrossEntropyOptions {
  Tensor weight = Tensor();  // (C) class weights, optional
  Reduction reduction = Reduction::mean;
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
};

class CrossEntropyLoss {
 public:
  explicit CrossEntropyLoss(CrossEntropyOptions options = {}) : options_(std::move(options)) {}
  // logits (N, C), target (N) i64 class indices.
  Tensor operator()(const Tensor& logits, const Tensor& target) const {
    return cross_entropy(logits, target, options_.weight, options_.reduction, options_.ignore_index,
                         options_.label_smoothing);
  }

 private:
  CrossEntropyOptions options_;
};

class MSELoss {
 public:
  explicit MSELoss(Reduction reduction = Reduction::mean) : reduction_(reduction) {}
  Tensor operator()(const Tensor& input, const Tensor& target) const {
    return mse_loss(input, target, reduction_);
  }

 private:
  Reduction reduction_;
};

class BCEWithLogitsLoss {
 public:
  explicit BCEWithLogitsLoss(Tensor pos_weight = Tensor(), Reduction reduction = Reduction::mean)
      : pos_weight_(std::move(pos_weight)), reduction_(reduction) {}
  Tensor operator()(const Tensor& logits, const Tensor& target) const {
    return binary_cross_entropy_with_logits(logits, target, Tensor(), pos_weight_, reduction_);
  }

 private:
  Tensor pos_weight_;
  Reduction reduction_;
};

}  // namespace rg::nn
