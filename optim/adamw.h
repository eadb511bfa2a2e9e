#pragma once
// AdamW (Loshchilov & Hutter): Adam with weight decay decoupled from the gradient — PyTorch's
// torch.optim.AdamW update, step for step. For a parameter p with gradient g, at its t-th
// update (t counts from 1, per parameter):
//
//   p ← p · (1 − lr · weight_decay)                       decoupled decay, before the moments
//   m ← m + (1 − β1) · (g − m)                            = β1·m + (1 − β1)·g  (PyTorch's lerp)
//   v ← β2 · v + (1 − β2) · g²
//   v̂ ← max(v̂, v)                                         (amsgrad only; v̂ starts at 0)
//   p ← p − lr / (1 − β1ᵗ) · m / (√v / √(1 − β2ᵗ) + eps)   (√v̂ instead of √v with amsgrad)
//
// The bias corrections 1 − βᵗ undo the zero start of m and v. State per parameter:
// "exp_avg" (m), "exp_avg_sq" (v), "max_exp_avg_sq" (v̂, amsgrad only) and the step count t.

#include "optim/optimizer.h"

namespace rg {

enum class AmsGrad { off, on };

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
  AmsGrad amsgrad = AmsGrad::off;
};

class AdamW : public GroupedOptimizer<AdamWOptions> {
 public:
  // Throws rg::Error for lr, eps or weight_decay < 0 (or NaN) and betas outside [0, 1).
  AdamW(std::vector<ParamGroup<AdamWOptions>> groups);
  AdamW(std::vector<Tensor> params, AdamWOptions options)
      : AdamW(std::vector<ParamGroup<AdamWOptions>>{{std::move(params), options}}) {}

  void step() override;
  std::unique_ptr<Optimizer> over(std::vector<std::vector<Tensor>> groups) const override;

 protected:
  void validate(const AdamWOptions& options) const override;
  nlohmann::json options_json(std::size_t group) const override;
  void load_options_json(std::size_t group, const nlohmann::json& options) override;
  std::vector<std::string> state_names(std::size_t group) const override;
  bool counts_steps() const override { return true; }
};

}  // namespace rg
