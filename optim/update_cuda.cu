// The training step on a GPU: one multi-tensor launch per step and device
// (optim_kernels.cuh), on the device's current stream.
#include <limits>

#include "core/cuda/stream.h"
#include "optim/optim_kernels.cuh"

namespace rg::detail {

void sgd_step(OnCuda, const std::vector<SgdItem>& items) {
  const int index = items.front().param.device().index;
  cuda::DeviceGuard guard(index);
  launch_sgd(items, cuda::current_stream(index));
}

void adamw_step(OnCuda, const std::vector<AdamWItem>& items) {
  const int index = items.front().param.device().index;
  cuda::DeviceGuard guard(index);
  launch_adamw(items, cuda::current_stream(index));
}

void lookahead_update(OnCuda, const std::vector<LookaheadItem>& items, double decay) {
  const int index = items.front().tensor.device().index;
  cuda::DeviceGuard guard(index);
  launch_lookahead(items, decay, cuda::current_stream(index));
}

int64_t unscale_grads(OnCuda, const std::vector<Tensor>& grads, const std::vector<int64_t>& indices,
                      double inv_scale) {
  const Device device = grads.front().device();
  cuda::DeviceGuard guard(device.index);
  // No bad gradient leaves the flag at a value above every index: 2^53 (exact in the double
  // that full() takes).
  const double none = 9007199254740992.0;
  const Tensor flag = full({1}, none, {DType::i64, device});
  launch_unscale(grads, indices, inv_scale, flag, cuda::current_stream(device.index));
  const double bad = flag.item();  // the step's one read back: the loss scaler's verdict
  return bad == none ? -1 : static_cast<int64_t>(bad);
}

NormAndCoef total_norm(OnCuda, const std::vector<Tensor>& grads, const Device& device, double p,
                       double max_norm) {
  cuda::DeviceGuard guard(device.index);
  NormAndCoef out{empty({}, {DType::f64, device}),
                  max_norm >= 0 ? empty({}, {DType::f64, device}) : Tensor()};
  launch_total_norm(grads, device, p, out.norm, max_norm, out.coef,
                    cuda::current_stream(device.index));
  return out;
}

void scale_grads(OnCuda, const std::vector<Tensor>& grads, const Tensor& coef) {
  const int index = coef.device().index;
  cuda::DeviceGuard guard(index);
  launch_scale(grads, coef, cuda::current_stream(index));
}

}  // namespace rg::detail
