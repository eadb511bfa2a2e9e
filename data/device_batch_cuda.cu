// The device data path on the GPU: device_batch_kernels.cuh's launchers on the current stream.
#include "core/cuda/stream.h"
#include "data/device_batch_kernels.cuh"

namespace rg::data::detail {

void plan_epoch(OnCuda, const Tensor& order, const GeometrySpec& spec, uint64_t seed,
                uint64_t epoch, int64_t height, int64_t width, const Tensor& plan) {
  const int index = order.device().index;
  cuda::DeviceGuard guard(index);
  launch_plan_epoch(order, spec, seed, epoch, height, width, plan, cuda::current_stream(index));
}

void gather_batch(OnCuda, const GatherInputs& in, int64_t start, const Tensor& images_out,
                  const Tensor& labels_out) {
  const int index = images_out.device().index;
  cuda::DeviceGuard guard(index);
  launch_gather_batch(in, start, images_out, labels_out, cuda::current_stream(index));
}

void shifted_view(OnCuda, const Tensor& images, int64_t dy, int64_t dx, Mirror mirror,
                  const Tensor& out) {
  const int index = images.device().index;
  cuda::DeviceGuard guard(index);
  launch_shifted_view(images, dy, dx, mirror, out, cuda::current_stream(index));
}

}  // namespace rg::data::detail
