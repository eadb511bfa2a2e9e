// CPU kernels of dropout: the mask and the scaling, element by element over parallel_for chunks
// (the mask of element i depends only on (seed, offset, i), never on the chunking).
#include "core/philox.h"
#include "core/thread_pool.h"
#include "ops/dropout/dropout_kernel.h"

namespace rg::detail {
namespace {

constexpr int64_t kGrain = 1 << 13;  // Philox costs ~10 multiplies per element

}  // namespace

void dropout_forward(OnCpu, const Tensor& x, const DropoutDraw& draw, const Tensor& mask,
                     const Tensor& y) {
  uint8_t* m = mask.data<uint8_t>();
  parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      m[i] = philox_uniform_f32(draw.seed, draw.offset, static_cast<uint64_t>(i)) >= draw.threshold
                 ? 1
                 : 0;
  });
  dropout_backward(OnCpu{}, x, mask, draw.scale, y);  // y = x · mask · scale, the same product
}

void dropout_backward(OnCpu, const Tensor& gy, const Tensor& mask, double scale, const Tensor& gx) {
  dispatch_floating(gy.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* src = static_cast<const T*>(gy.data_ptr());
    const uint8_t* m = mask.data<uint8_t>();
    T* dst = static_cast<T*>(gx.data_ptr());
    const C s = static_cast<C>(scale);
    parallel_for(gy.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dst[i] = T(m[i] ? static_cast<C>(src[i]) * s : C(0));
    });
  });
}

}  // namespace rg::detail
