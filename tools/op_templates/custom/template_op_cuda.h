#pragma once
// The CUDA entry points of template_op (defined in template_op_cuda.cu, built only with the CUDA
// backend). template_op.cpp names them through dispatch_device, which instantiates the call only
// in CUDA builds: a CPU-only build never references them.

#include "core/dispatch.h"
#include "core/tensor.h"

namespace rg {

Tensor template_op_forward(OnCuda, const Tensor& x);                     // x contiguous
Tensor template_op_backward(OnCuda, const Tensor& gy, const Tensor& x);  // gy, x contiguous

}  // namespace rg
