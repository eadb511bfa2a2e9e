#pragma once
// sum(x) = Σ_i x_i over all elements: a 0-d tensor.
// sum(x, dims, keepdim) sums over `dims` (negative dims count from the back; an empty list
// means every dim, as in PyTorch). With KeepDim::yes the reduced dims stay as size 1.
//   x: (d0, ..., dk)   y: x's shape without the reduced dims (or with them as 1)
// Accumulates in double for every floating dtype on the CPU (see sum_cpu.cpp for why); on the GPU
// in float (double for f64) through a tree of partial sums (core/cuda/reduce_kernels.cuh).
// Backward: gx = gy broadcast back over the reduced dims.

#include <vector>

#include "core/tensor.h"
#include "ops/reduction/reduction.h"

namespace rg {

Tensor sum(const Tensor& x);
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, KeepDim keepdim = KeepDim::no);

}  // namespace rg
