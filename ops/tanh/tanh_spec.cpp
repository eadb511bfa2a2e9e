// tanh's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/tanh/tanh.h"
#include "ops/tanh/tanh_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

RG_OP_SPECS(tanh) {
  const Call call = [](const Inputs& x) { return tanh(x[0]); };
  return {{
      .name = "tanh",
      .gradchecks = unary_gradchecks([](const Tensor& x) { return tanh(x); }, -3, 3),
      .fixtures = {{"tanh", {"small", "wide"}, {"x"}, call}},
      .bad_inputs = integer_inputs("tanh", [](const Tensor& x) { tanh(x); }),
      .devices = {{"tanh",
                   [] {
                     tanh(on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 1)},
      .kernels = {pointwise_kernel<1>("tanh", TanhFn{}),
                  pointwise_kernel<2>("tanh_grad", TanhGradFn{})},
      .benches = {bandwidth_bench("tanh", 1, call)},
  }};
}

}  // namespace rg::testing
