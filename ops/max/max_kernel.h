#pragma once
// The kernels of max, on the CPU (max_cpu.cpp) and the GPU (max_kernels.cuh, max_cuda.cu).
// Internal to the ops layer.

#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/max/max.h"

namespace rg::detail {

// The largest element of x (numel > 0), a 0-d tensor on x's device.
Tensor max_all(OnCpu, const Tensor& x);
Tensor max_all(OnCuda, const Tensor& x);

// values and indices along `dim` (normalised, non-empty), shaped out_shape.
MaxResult max_along(OnCpu, const Tensor& x, int64_t dim, const Shape& out_shape);
MaxResult max_along(OnCuda, const Tensor& x, int64_t dim, const Shape& out_shape);

// gx of max(x) = y: gy shared evenly among the elements equal to y.
Tensor max_all_backward(OnCpu, const Tensor& gy, const Tensor& x, const Tensor& y);
Tensor max_all_backward(OnCuda, const Tensor& gy, const Tensor& x, const Tensor& y);

// gx of max(x, dim): gy at each lane's argmax, 0 elsewhere.
Tensor max_along_backward(OnCpu, const Tensor& gy, const Tensor& indices, const Shape& x_shape,
                          int64_t dim);
Tensor max_along_backward(OnCuda, const Tensor& gy, const Tensor& indices, const Shape& x_shape,
                          int64_t dim);

}  // namespace rg::detail
