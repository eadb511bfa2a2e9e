// sqrt's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/sqrt/sqrt.h"
#include "ops/sqrt/sqrt_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

RG_OP_SPECS(sqrt) {
  const Call call = [](const Inputs& x) { return sqrt(x[0]); };
  return {{
      .name = "sqrt",
      .gradchecks = unary_gradchecks([](const Tensor& x) { return sqrt(x); }, 0.2, 3),
      .fixtures = {{"sqrt", {"positive", "wide", "domain"}, {"x"}, call}},
      .bad_inputs = integer_inputs("sqrt", [](const Tensor& x) { sqrt(x); }),
      .devices = {{"sqrt",
                   [] {
                     sqrt(on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 1, kPositiveValues)},
      .kernels = {pointwise_kernel<1>("sqrt", SqrtFn{}, kPositiveValues),
                  pointwise_kernel<2>("sqrt_grad", SqrtGradFn{}, kPositiveValues)},
      .benches = {bandwidth_bench("sqrt", 1, call, kPositiveValues)},
  }};
}

}  // namespace rg::testing
