#pragma once
// Finite-difference gradient checking in f64: the full Jacobian of fn at `inputs`, by central
// differences, against the one autograd computes (one backward per output element).

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "core/tensor.h"
#include "tests/support/grad_input.h"

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

}  // namespace rg::testing
