#include "optim/lookahead.h"

#include <cmath>

#include "core/autograd.h"
#include "core/error.h"
#include "ops/ops.h"
#include "optim/update_items.h"

namespace rg {

Lookahead::Lookahead(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    RG_CHECK(t.defined() && is_floating(t.dtype()), "Lookahead: tensor ", i,
             " must be a defined floating tensor, got ", t.defined() ? t.describe() : "undefined");
    averages_.push_back(t.detach().clone());
  }
}

void Lookahead::update(double decay) {
  RG_CHECK(decay >= 0 && decay <= 1, "Lookahead: decay must be in [0, 1], got ", decay);
  NoGradGuard no_grad;
  // a + (1 − decay)·(t − a): torch.lerp_'s form, which airbench94 uses; one fused pass over all
  // tensors (a CUDA device: one launch), with the rounding of sub, mul and add in turn.
  std::vector<detail::LookaheadItem> items;
  std::vector<std::size_t> through_copy;  // tensors not contiguous: updated as contiguous copies
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    Tensor t = tensors_[i].detach();
    if (!t.is_contiguous()) {
      t = t.contiguous();
      through_copy.push_back(i);
    }
    items.push_back({t, averages_[i]});
  }
  detail::lookahead_update(items, decay);
  for (std::size_t i : through_copy) copy_strided(tensors_[i].detach(), items[i].tensor);
}

double lookahead_decay(int64_t step, int64_t total_steps) {
  RG_CHECK(total_steps > 0 && step >= 0 && step <= total_steps,
           "lookahead_decay: step must be in [0, total_steps], got ", step, " of ", total_steps);
  const double frac = static_cast<double>(step) / static_cast<double>(total_steps);
  return std::pow(0.95, 5) * frac * frac * frac;
}

void airbench94_lookahead(Lookahead& lookahead, int64_t step, int64_t total_steps) {
  if (step % 5 == 0) lookahead.update(lookahead_decay(step, total_steps));
  if (step == total_steps) lookahead.update(1.0);
}

std::vector<Tensor> model_state(const nn::Module& model) {
  std::vector<Tensor> state;
  for (const auto& [name, p] : model.named_parameters()) state.push_back(p);
  for (const auto& [name, b] : model.named_buffers())
    if (is_floating(b.dtype())) state.push_back(b);
  return state;
}

}  // namespace rg
