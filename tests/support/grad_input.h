#pragma once
// The inputs of gradchecks (tests/support/gradcheck.h), also made by the ops' specs
// (tests/support/op_spec.h), which must not need GoogleTest.

#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"

namespace rg::testing {

// A leaf f64 tensor of `shape` with values uniform in [lo, hi), requiring grad; the same values
// for the same seed, whatever the global generator did before.
inline Tensor grad_input(const Shape& shape, double lo = -1, double hi = 1, uint64_t seed = 1) {
  std::vector<double> v(static_cast<std::size_t>(numel_of(shape)));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = lo + (hi - lo) * philox_uniform_f64(seed, 77, i);
  return from_vector(v, shape, {DType::f64}).set_requires_grad(true);
}

}  // namespace rg::testing
