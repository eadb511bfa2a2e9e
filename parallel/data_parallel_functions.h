#pragma once
// The communication pieces of DataParallel as adjoint autograd pairs, after PyTorch's
// torch/nn/parallel/_functions.py. Each forward is the other's backward:
//
//   scatter    x (B, ...) on device 0  ->  x_r (B_r, ...) on device r    backward: gather
//   gather     y_r on device r         ->  y (B, ...) on device 0          backward: scatter
//   broadcast  p on device 0           ->  p_r on every device r          backward: reduce-add
//
// so that when loss.backward() reaches them, the gradient of the loss with respect to the
// input and the master parameters is assembled on device 0 by the autograd engine itself: no
// hooks. (A copy "to device 0" on device 0 itself is no copy: x_0 is a view of x, p_0 an
// alias of p — as PyTorch's scatter and broadcast do.)

#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace rg::parallel {

// Seconds spent in each phase of DataParallel since the last reset, summed over steps.
struct DataParallelTimes {
  double scatter = 0, replicate = 0, forward = 0, gather = 0, backward = 0, reduce = 0;
  int64_t forwards = 0, backwards = 0;
  // Per device: seconds its thread computed in forward / in backward (the others wait).
  std::vector<double> device_forward, device_backward;

  // After the replicas' forward (backward): one more, and each device thread's busy seconds.
  void count_forward(const std::vector<double>& busy) { count(busy, device_forward, forwards); }
  void count_backward(const std::vector<double>& busy) { count(busy, device_backward, backwards); }

 private:
  static void count(const std::vector<double>& busy, std::vector<double>& per_device,
                    int64_t& passes) {
    for (std::size_t r = 0; r < busy.size() && r < per_device.size(); ++r) per_device[r] += busy[r];
    ++passes;
  }
};

// The sizes of n shares of `batch` samples: as equal as possible, the first batch mod n one
// larger (10 over 3 devices: 4, 3, 3).
std::vector<int64_t> split_sizes(int64_t batch, int n);

// x split along dim 0 into sizes.size() pieces, piece r copied to devices[r] (a view for the
// piece on x's own device). Backward: the pieces' gradients gathered onto x's device.
std::vector<Tensor> scatter(const Tensor& x, const std::vector<int64_t>& sizes,
                            const std::vector<Device>& devices,
                            std::shared_ptr<DataParallelTimes> times = nullptr);

// The parts (on any devices) concatenated along dim 0 on `target`. Backward: the gradient
// split back, piece r to parts[r]'s device. times->backward gets the backward's seconds.
Tensor gather(const std::vector<Tensor>& parts, const Device& target,
              std::shared_ptr<DataParallelTimes> times = nullptr);

// replicas[r][i] = tensors[i] on devices[r]: an alias for the device tensors[i] is on, a copy
// elsewhere. Differentiable: the gradients of replicas[0..n)[i] are summed (reduce-add) onto
// tensors[i]'s device, and times->reduce gets the seconds that takes.
std::vector<std::vector<Tensor>> broadcast(const std::vector<Tensor>& tensors,
                                           const std::vector<Device>& devices,
                                           std::shared_ptr<DataParallelTimes> times = nullptr);

// Σ_r parts[r], on `target`, summed in order r = 0, 1, ... (each part copied there first).
Tensor reduce_add(const std::vector<Tensor>& parts, const Device& target);

}  // namespace rg::parallel
