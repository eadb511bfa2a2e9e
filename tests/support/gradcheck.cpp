#include "tests/support/gradcheck.h"

#include <cmath>
#include <sstream>

#include "core/autograd.h"
#include "core/rng.h"

namespace rg::testing {

::testing::AssertionResult gradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs,
                                     GradcheckOptions options) {
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad() &&
        (t.dtype() != DType::f64 || !t.is_contiguous() || !t.is_leaf()))
      return ::testing::AssertionFailure()
             << "gradcheck needs contiguous f64 leaf inputs, got " << t.describe();

  Tensor y0;
  {
    NoGradGuard no_grad;
    y0 = fn(inputs).contiguous();
  }
  const int64_t m = y0.numel();
  if (y0.dtype() != DType::f64)
    return ::testing::AssertionFailure() << "gradcheck: output is " << y0.describe();

  for (std::size_t j = 0; j < inputs.size(); ++j) {
    const Tensor& x = inputs[j];
    if (!x.defined() || !x.requires_grad()) continue;
    const int64_t n = x.numel();
    // Analytical Jacobian, one row (output element) at a time.
    std::vector<double> analytic(static_cast<std::size_t>(m * n), 0.0);
    for (int64_t i = 0; i < m; ++i) {
      for (const Tensor& t : inputs)
        if (t.defined()) const_cast<Tensor&>(t).zero_grad();
      Tensor y = fn(inputs);
      if (!y.requires_grad())
        return ::testing::AssertionFailure() << "gradcheck: output does not require grad";
      std::vector<double> onehot(static_cast<std::size_t>(m), 0.0);
      onehot[static_cast<std::size_t>(i)] = 1.0;
      y.backward(from_vector(onehot, y.shape(), {DType::f64}));
      Tensor g = x.grad();
      if (!g.defined()) continue;  // no dependence: row stays 0
      if (g.shape() != x.shape())
        return ::testing::AssertionFailure() << "gradcheck: grad of input " << j << " is "
                                             << g.describe() << ", input is " << x.describe();
      std::vector<double> gv = g.to_vector<double>();
      for (int64_t k = 0; k < n; ++k) analytic[static_cast<std::size_t>(i * n + k)] = gv[k];
    }
    // Numerical Jacobian, one column (input element) at a time.
    double* data = x.data<double>();
    for (int64_t k = 0; k < n; ++k) {
      const double orig = data[k];
      std::vector<double> plus, minus;
      {
        NoGradGuard no_grad;
        data[k] = orig + options.eps;
        plus = fn(inputs).to_vector<double>();
        data[k] = orig - options.eps;
        minus = fn(inputs).to_vector<double>();
        data[k] = orig;
      }
      for (int64_t i = 0; i < m; ++i) {
        const double numeric = (plus[i] - minus[i]) / (2 * options.eps);
        const double a = analytic[static_cast<std::size_t>(i * n + k)];
        if (std::fabs(a - numeric) > options.atol + options.rtol * std::fabs(numeric)) {
          return ::testing::AssertionFailure()
                 << "gradcheck: input " << j << " " << x.describe() << ", d out[" << i
                 << "] / d in[" << k << "]: analytic " << a << " vs numeric " << numeric;
        }
      }
    }
  }
  for (const Tensor& t : inputs)
    if (t.defined()) const_cast<Tensor&>(t).zero_grad();
  return ::testing::AssertionSuccess();
}

}  // namespace rg::testing
