#include "optim/clip_grad.h"

#include <cmath>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "optim/param_update.h"
#include "optim/update_items.h"

namespace rg {

namespace {

std::vector<Tensor> defined_grads(const std::vector<Tensor>& params, const char* op) {
  std::vector<Tensor> grads;
  for (std::size_t i = 0; i < params.size(); ++i) {
    RG_CHECK(params[i].defined(), op, ": parameter ", i, " is undefined");
    const Tensor g = params[i].grad();
    if (!g.defined()) continue;
    grads.push_back(g);
  }
  return grads;
}

// The one device of all gradients (all cpu devices count as one: the CPU loops serve them).
Device common_device(const std::vector<Tensor>& grads, const char* op) {
  if (grads.empty()) return Device::cpu();
  const Device d = grads.front().device();
  for (const Tensor& g : grads)
    RG_CHECK(g.device() == d || (g.device().is_cpu() && d.is_cpu()), op,
             ": all gradients must be on one device, got ", grads.front().describe(), " and ",
             g.describe());
  return d;
}

void check_norm_type(double p, const char* op) {
  RG_CHECK(p > 0, op, ": norm_type must be > 0 or infinity, got ", p);
}

// Norm (and, for max_norm >= 0, the clipping coefficient) on the gradients' device; with
// `clip`, the gradients scaled there too.
detail::NormAndCoef norm_and_clip(const std::vector<Tensor>& params, double max_norm, double p,
                                  bool clip, const char* op) {
  check_norm_type(p, op);
  if (clip) RG_CHECK(max_norm >= 0, op, ": max_norm must be >= 0, got ", max_norm);
  const std::vector<Tensor> grads = defined_grads(params, op);
  const Device device = common_device(grads, op);
  NoGradGuard no_grad;
  std::vector<detail::WorkingView> views;
  std::vector<Tensor> work;
  for (const Tensor& g : grads) {
    views.push_back(detail::working_view(g));
    work.push_back(views.back().work);
  }
  return dispatch_device<Kernels::cpu_and_cuda>(op, device, [&](auto on) {
    detail::NormAndCoef out = detail::total_norm(on, work, device, p, clip ? max_norm : -1);
    if (clip) {
      detail::scale_grads(on, work, out.coef);
      for (const auto& v : views) detail::write_back(v);
    }
    return out;
  });
}

}  // namespace

double grad_norm(const std::vector<Tensor>& params, double norm_type) {
  return norm_and_clip(params, -1, norm_type, false, "grad_norm").norm.item();
}

Tensor clip_grad_norm_tensor(const std::vector<Tensor>& params, double max_norm, double norm_type) {
  return norm_and_clip(params, max_norm, norm_type, true, "clip_grad_norm").norm;
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm, double norm_type,
                      NonFiniteNorm on_nonfinite) {
  // The gradients are left alone when the norm is not finite, so checking afterwards is safe.
  const double total = clip_grad_norm_tensor(params, max_norm, norm_type).item();
  RG_CHECK(std::isfinite(total) || on_nonfinite == NonFiniteNorm::keep,
           "clip_grad_norm: the total norm of order ", norm_type, " of the gradients is ", total,
           " (a gradient holds inf or NaN); gradients left unchanged");
  return total;
}

}  // namespace rg
