// The CPU kernels of template_op: the plain reference that the CUDA kernels are tested against.
#include "core/dispatch.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "ops/template_op/template_op_kernel.h"

namespace rg {

void template_op_forward_cpu(const Tensor& y, const Tensor& x, int64_t rows, int64_t cols) {
  dispatch_floating(x.dtype(), "template_op", [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    // Rows split over the threads; each row summed in double, so that the GPU's float tree
    // (error near log2(cols)·u) is the only rounding that differs between the two.
    parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(cols, 1)),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t r = lo; r < hi; ++r) {
                     double acc = 0;
                     for (int64_t c = 0; c < cols; ++c) {
                       const double v = static_cast<double>(in[r * cols + c]);
                       acc += v * v;
                     }
                     out[r] = static_cast<T>(acc);
                   }
                 });
  });
}

void template_op_backward_cpu(const Tensor& gx, const Tensor& gy, const Tensor& x, int64_t rows,
                              int64_t cols) {
  dispatch_floating(x.dtype(), "template_op_backward", [&](auto tag) {
    using T = decltype(tag);
    using A = compute_t<T>;  // 16-bit types compute in f32 and round once, as on the GPU
    const T* g = gy.data<T>();
    const T* in = x.data<T>();
    T* out = gx.data<T>();
    parallel_for(rows * cols, 1 << 14, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        out[i] = static_cast<T>(A(2) * static_cast<A>(in[i]) * static_cast<A>(g[i / cols]));
    });
  });
}

}  // namespace rg
