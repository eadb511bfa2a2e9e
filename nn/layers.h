#pragma once
// The layers of CNNs: convolutions (nn/conv.h, any rank), BatchNorm, Linear, activations,
// pooling, resampling, dropout, flatten and Sequential. Each holds its parameters as named
// members and calls the op of the same name in ops/.

#include <array>
#include <memory>
#include <vector>

#include "nn/conv.h"
#include "nn/module.h"
#include "ops/ops.h"

namespace rg::nn {

// Adds one to a BatchNorm's num_batches_tracked (an i64 scalar) on its own device, without
// reading it back (ops/batch_norm/batch_norm_count.h: one kernel on a GPU). SyncBatchNorm counts
// the same way.
void count_batch(const Tensor& num_batches_tracked);

// Batch statistics in train mode (and a momentum update of the running ones), running
// statistics in eval mode. Weight 1, bias 0. Stays f32 when a model is cast to f16.
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t channels, double momentum = 0.1, double eps = 1e-5);
  Tensor forward(const Tensor& x) override;
  // relu(forward(x)) through the fused op batch_norm_relu (one pass less forward, the relu's
  // output never stored). A subclass that overrides forward (SyncBatchNorm) gets
  // relu(forward(x)) instead, so its own normalisation still runs.
  Tensor forward_relu(const Tensor& x);
  // gelu(forward(x)) through the fused op batch_norm_gelu (airbench94's BatchNorm→GELU), with
  // the same fallback for subclasses.
  Tensor forward_gelu(const Tensor& x);
  std::string type_name() const override { return "BatchNorm2d"; }
  std::string extra_repr() const override;
  bool keeps_float32() const override { return true; }
  Tensor weight_, bias_, running_mean_, running_var_, num_batches_tracked_;
  double momentum_, eps_;
};

// y = x·Wᵀ + b; W (out, in) and b drawn from U(±1/sqrt(in)) as PyTorch.
class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, Bias bias = Bias::with);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Linear"; }
  std::string extra_repr() const override;
  Tensor weight_, bias_;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override { return relu(x); }
  std::string type_name() const override { return "ReLU"; }
};

class MaxPool2d : public Module {
 public:
  MaxPool2d(Size2 kernel, Size2 stride, Size2 padding = {0, 0});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MaxPool2d"; }

 private:
  Size2 kernel_, stride_, padding_;
};

class AvgPool2d : public Module {
 public:
  AvgPool2d(Size2 kernel, Size2 stride, Size2 padding = {0, 0});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "AvgPool2d"; }

 private:
  Size2 kernel_, stride_, padding_;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(Size2 output_size) : output_size_(output_size) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "AdaptiveAvgPool2d"; }

 private:
  Size2 output_size_;
};

class Upsample : public Module {
 public:
  explicit Upsample(int64_t scale, UpsampleMode mode = UpsampleMode::nearest,
                    AlignCorners align = AlignCorners::off)
      : scale_(scale), mode_(mode), align_(align) {}
  Tensor forward(const Tensor& x) override { return upsample(x, scale_, mode_, align_); }
  std::string type_name() const override { return "Upsample"; }

 private:
  int64_t scale_;
  UpsampleMode mode_;
  AlignCorners align_;
};

// Zeroes elements with probability p in train mode (scaling the rest by 1/(1-p)).
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5) : p_(p) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Dropout"; }

 private:
  double p_;
};

// (N, d1, d2, ...) -> (N, d1·d2·...).
class Flatten : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x.flatten(1); }
  std::string type_name() const override { return "Flatten"; }
};

// Runs its children in order; they are named "0", "1", ... like torch.nn.Sequential.
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Sequential"; }
  int64_t size() const { return static_cast<int64_t>(children().size()); }

 protected:
  bool calls_children_through_registry() const override { return true; }
};

}  // namespace rg::nn
