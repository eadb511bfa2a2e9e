// gelu's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/gelu/gelu.h"
#include "ops/gelu/gelu_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

RG_OP_SPECS(gelu) {
  const Call call = [](const Inputs& x) { return gelu(x[0]); };
  return {{
      .name = "gelu",
      .gradchecks = unary_gradchecks([](const Tensor& x) { return gelu(x); }, -2, 2),
      .fixtures = {{"gelu", {"small", "wide"}, {"x"}, call}},
      .bad_inputs = integer_inputs("gelu", [](const Tensor& x) { gelu(x); }),
      .devices = {{"gelu",
                   [] {
                     gelu(on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 1)},
      .kernels = {pointwise_kernel<1>("gelu", GeluFn{}),
                  pointwise_kernel<2>("gelu_grad", GeluGradFn{})},
      .benches = {bandwidth_bench("gelu", 1, call)},
  }};
}

}  // namespace rg::testing
