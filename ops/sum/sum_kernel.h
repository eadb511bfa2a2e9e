#pragma once
// The reduction kernel shared by sum and mean (mean is sum scaled by 1/count). Internal to
// the ops layer.

#include <string_view>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"
#include "ops/reduction/reduction.h"

namespace rg::detail {

struct ReducePlan {
  Shape in_shape;
  std::vector<bool> reduced;  // per dim of x
  Shape out_shape;            // the result's shape (KeepDim applied)
  Shape kept_shape;           // x's shape with reduced dims as 1: gy viewed so broadcasts to x
  int64_t count = 1;          // elements reduced into each output
};

// Normalises and checks `dims` (range, duplicates) for a tensor of `shape`; `all` reduces
// every dim regardless of `dims`.
ReducePlan plan_reduce(const Shape& shape, const std::vector<int64_t>& dims, bool all,
                       KeepDim keepdim, std::string_view op);

// y = scale · Σ x over the plan's reduced dims (any floating dtype, any strides), on x's device:
// the entry point of sum and mean, and its kernels per backend (sum_cpu.cpp, sum_cuda.cu).
Tensor sum_reduce(std::string_view op, const Tensor& x, const ReducePlan& plan, double scale);
Tensor sum_reduce(OnCpu, const Tensor& x, const ReducePlan& plan, double scale);
Tensor sum_reduce(OnCuda, const Tensor& x, const ReducePlan& plan, double scale);

// gx = scale · gy broadcast back to the plan's input shape, contiguous.
Tensor sum_backward(const Tensor& gy, const ReducePlan& plan, double scale);

}  // namespace rg::detail
