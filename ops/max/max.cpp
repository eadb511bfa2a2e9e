#include "ops/max/max.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/max/max_kernel.h"

namespace rg {

Tensor max(const Tensor& x) {
  check_same_float("max", {x});
  RG_CHECK(x.numel() > 0, "max: the maximum of an empty tensor is undefined, got ", x.describe());
  Tensor y = dispatch_device<Kernels::cpu_and_cuda>(
      "max", x.device(), [&](auto on) { return detail::max_all(on, x.contiguous()); });
  if (needs_grad({x}))
    record_backward("MaxAllBackward", {x}, y, [x = saved(x), y = saved(y)](const Tensor& gy) {
      return dispatch_device<Kernels::cpu_and_cuda>("max_backward", x.device(), [&](auto on) {
        return detail::max_all_backward(on, gy, x, y);
      });
    });
  return y;
}

MaxResult max(const Tensor& x, int64_t dim, KeepDim keepdim) {
  check_same_float("max", {x});
  dim = normalize_dim(dim, x.dim(), "max");
  const Shape& shape = x.shape();
  Shape out_shape;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != dim || keepdim == KeepDim::yes) out_shape.push_back(shape[d]);
  if (x.dim() > 0) {
    RG_CHECK(shape[dim] > 0, "max: dim ", dim, " of ", x.describe(),
             " is empty; the maximum of nothing is undefined");
    if (keepdim == KeepDim::yes) out_shape[dim] = 1;
  }
  MaxResult r = dispatch_device<Kernels::cpu_and_cuda>("max", x.device(), [&](auto on) {
    return detail::max_along(on, x.contiguous(), dim, out_shape);
  });
  if (needs_grad({x}))
    record_backward(
        "MaxDimBackward", {x}, r.values, [indices = r.indices, shape, dim](const Tensor& gy) {
          return dispatch_device<Kernels::cpu_and_cuda>(
              "max_backward", indices.device(),
              [&](auto on) { return detail::max_along_backward(on, gy, indices, shape, dim); });
        });
  return r;
}

}  // namespace rg
