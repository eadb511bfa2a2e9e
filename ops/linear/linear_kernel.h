#pragma once
// linear's kernels per backend (linear_cpu.cpp, linear_cuda.cu). Internal to the ops layer.
//   x2: (M, I) the input as rows, w: (O, I), bias: (O) or undefined, gy2: (M, O).

#include "core/dispatch.h"
#include "core/tensor.h"

namespace rg::detail {

// y2 = x2·wᵀ + bias: (M, O), of x2's dtype.
Tensor linear_forward(OnCpu, const Tensor& x2, const Tensor& w, const Tensor& bias);
Tensor linear_forward(OnCuda, const Tensor& x2, const Tensor& w, const Tensor& bias);

struct LinearGrads {
  Tensor x2, weight, bias;  // undefined where not wanted
};
struct LinearWants {
  bool x2 = false, weight = false, bias = false;
};
// gx2 = gy2·w, gweight = gy2ᵀ·x2, gbias = Σ_rows gy2, each of gy2's dtype. x2 is read only for
// gweight and w only for gx2 (the others may be undefined).
LinearGrads linear_backward(OnCpu, const Tensor& gy2, const Tensor& x2, const Tensor& w,
                            LinearWants wants);
LinearGrads linear_backward(OnCuda, const Tensor& gy2, const Tensor& x2, const Tensor& w,
                            LinearWants wants);

}  // namespace rg::detail
