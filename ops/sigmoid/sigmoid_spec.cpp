// sigmoid's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/sigmoid/sigmoid.h"
#include "ops/sigmoid/sigmoid_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

RG_OP_SPECS(sigmoid) {
  const Call call = [](const Inputs& x) { return sigmoid(x[0]); };
  return {{
      .name = "sigmoid",
      .gradchecks = unary_gradchecks([](const Tensor& x) { return sigmoid(x); }, -3, 3),
      .fixtures = {{"sigmoid", {"small", "wide"}, {"x"}, call}},
      .bad_inputs = integer_inputs("sigmoid", [](const Tensor& x) { sigmoid(x); }),
      .devices = {{"sigmoid",
                   [] {
                     sigmoid(on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 1)},
      .kernels = {pointwise_kernel<1>("sigmoid", SigmoidFn{}),
                  pointwise_kernel<2>("sigmoid_grad", SigmoidGradFn{})},
      .benches = {bandwidth_bench("sigmoid", 1, call)},
  }};
}

}  // namespace rg::testing
