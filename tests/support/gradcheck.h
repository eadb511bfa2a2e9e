#pragma once
// Finite-difference gradient checking in f64: the full Jacobian of fn at `inputs`, by central
// differences, against the one autograd computes (one backward per output element).

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "core/tensor.h"

namespace rg::testing {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
};

using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;

// `inputs` are f64 cpu tensors; those with requires_grad are checked. fn must be
// deterministic (dropout: fix the seed inside fn).
::testing::AssertionResult gradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs,
                                     GradcheckOptions options = {});

// A leaf f64 tensor of `shape` with values uniform in [lo, hi), requiring grad.
Tensor grad_input(const Shape& shape, double lo = -1, double hi = 1, uint64_t seed = 1);

}  // namespace rg::testing
