// The device data path on a cpu device: the element functions of device_batch.h in a
// parallel_for, the very code the GPU kernels run (device_batch_kernels.cuh).
#include "core/thread_pool.h"
#include "data/device_batch.h"

namespace rg::data::detail {

namespace {
// Elements per chunk: a gather element is a few loads and a store.
constexpr int64_t kGrain = 1 << 14;
}  // namespace

void plan_epoch(OnCpu, const Tensor& order, const GeometrySpec& spec, uint64_t seed, uint64_t epoch,
                int64_t height, int64_t width, const Tensor& plan) {
  const auto* o = static_cast<const int64_t*>(order.data_ptr());
  auto* p = static_cast<int64_t*>(plan.data_ptr());
  parallel_for(order.numel(), 256, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) plan_element(o, i, spec, seed, epoch, height, width, p);
  });
}

void gather_batch(OnCpu, const GatherInputs& in, int64_t start, const Tensor& images_out,
                  const Tensor& labels_out) {
  dispatch_floating(images_out.dtype(), "gather_batch", [&](auto tag) {
    using T = decltype(tag);
    const GatherArgs<T> a = gather_args<T>(in, start, images_out, labels_out);
    parallel_for(images_out.numel(), kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e) gather_element(a, e);
    });
  });
}

void shifted_view(OnCpu, const Tensor& images, int64_t dy, int64_t dx, Mirror mirror,
                  const Tensor& out) {
  dispatch_floating(images.dtype(), "shifted_view", [&](auto tag) {
    using T = decltype(tag);
    const ViewArgs<T> a = view_args<T>(images, dy, dx, mirror, out);
    parallel_for(images.numel(), kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e) view_element(a, e);
    });
  });
}

}  // namespace rg::data::detail
