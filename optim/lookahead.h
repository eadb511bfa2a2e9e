#pragma once
// Lookahead as airbench94 does it (its LookaheadState): a running average of the weights that
// the weights themselves are reset to. For every tracked tensor t with average a,
//
//   update(decay):   a ← decay·a + (1 − decay)·t,   then   t ← a
//
// airbench94 calls update every 5 optimizer steps with decay = lookahead_decay(step, total),
// which grows from 0 to 0.95⁵ as (step / total)³ — little averaging early, much late — and once
// more after the last step with decay 1 (the weights become the average). It tracks every
// floating tensor of the model's state: the parameters and BatchNorm's running statistics.
// The averages start as copies of the tensors when the Lookahead is made. An update is one fused
// pass over all tensors: on a GPU one multi-tensor launch (optim_kernels.cuh) per device.

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "nn/module.h"

namespace rg {

class Lookahead {
 public:
  // The tensors are updated in place (the model's own parameters and buffers); each must be a
  // defined floating tensor. Throws rg::Error otherwise, naming its position.
  explicit Lookahead(std::vector<Tensor> tensors);
  // Throws rg::Error for decay outside [0, 1].
  void update(double decay);
  const std::vector<Tensor>& averages() const { return averages_; }

 private:
  std::vector<Tensor> tensors_, averages_;
};

// airbench94's schedule of the decay: 0.95⁵ · (step / total_steps)³.
double lookahead_decay(int64_t step, int64_t total_steps);

// What airbench94 calls after optimizer step `step` (from 1) of `total_steps`: an update with
// lookahead_decay(step, total_steps) every 5 steps, and after the last step one with decay 1,
// which leaves the weights at their average.
void airbench94_lookahead(Lookahead& lookahead, int64_t step, int64_t total_steps);

// A model's floating state as airbench94 averages it (its state_dict's f16/f32 entries): the
// parameters, then the floating buffers (BatchNorm's running statistics, not its counter).
std::vector<Tensor> model_state(const nn::Module& model);

}  // namespace rg
