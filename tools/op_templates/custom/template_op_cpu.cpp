// The CPU kernels of template_op: the plain reference that the CUDA kernels are tested against.
#include "core/dispatch.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "ops/template_op/template_op_kernel.h"

namespace rg {
namespace {

// Below this many elements a chunk is not worth a thread.
constexpr int64_t kGrain = 1 << 14;

}  // namespace

void template_op_forward_cpu(const Tensor& y, const Tensor& x) {
  dispatch_floating(x.dtype(), "template_op", [&](auto tag) {
    using T = decltype(tag);
    using A = compute_t<T>;  // 16-bit types compute in f32 and round once, as on the GPU
    const T* in = x.data<T>();
    T* out = y.data<T>();
    parallel_for(x.numel(), kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const A v = static_cast<A>(in[i]);
        out[i] = static_cast<T>(v * v * v);
      }
    });
  });
}

void template_op_backward_cpu(const Tensor& gx, const Tensor& gy, const Tensor& x) {
  dispatch_floating(x.dtype(), "template_op_backward", [&](auto tag) {
    using T = decltype(tag);
    using A = compute_t<T>;  // 16-bit types compute in f32 and round once, as on the GPU
    const T* g = gy.data<T>();
    const T* in = x.data<T>();
    T* out = gx.data<T>();
    parallel_for(x.numel(), kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const A v = static_cast<A>(in[i]);
        out[i] = static_cast<T>(A(3) * v * v * static_cast<A>(g[i]));
      }
    });
  });
}

}  // namespace rg
