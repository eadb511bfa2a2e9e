#pragma once
// SGD with momentum, dampening, weight decay and Nesterov momentum — PyTorch's torch.optim.SGD
// update, step for step. For a parameter p with gradient g (one group's options):
//
//   g ← g + weight_decay · p                       (when weight_decay ≠ 0; L2, coupled)
//   b ← g                                          (first update of p: the buffer starts at g)
//   b ← momentum · b + (1 − dampening) · g         (later updates; when momentum ≠ 0)
//   g ← g + momentum · b   (Nesterov)   or   g ← b (classical)
//   p ← p − lr · g
//
// State per parameter: "momentum_buffer" (when momentum ≠ 0).

#include "optim/optimizer.h"

namespace rg {

enum class Nesterov { off, on };

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  Nesterov nesterov = Nesterov::off;
};

class SGD : public GroupedOptimizer<SGDOptions> {
 public:
  // Throws rg::Error for lr, momentum or weight_decay < 0 (or NaN), and for Nesterov without
  // momentum or with dampening (PyTorch's rules).
  SGD(std::vector<ParamGroup<SGDOptions>> groups);
  SGD(std::vector<Tensor> params, SGDOptions options)
      : SGD(std::vector<ParamGroup<SGDOptions>>{{std::move(params), options}}) {}

  void step() override;
  std::unique_ptr<Optimizer> over(std::vector<std::vector<Tensor>> groups) const override;

 protected:
  void validate(const SGDOptions& options) const override;
  nlohmann::json options_json(std::size_t group) const override;
  void load_options_json(std::size_t group, const nlohmann::json& options) override;
  std::vector<std::string> state_names(std::size_t group) const override;
  bool counts_steps() const override { return false; }
  bool reads_lr_on_device() const override { return true; }
};

}  // namespace rg
