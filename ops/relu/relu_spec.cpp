// relu's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/relu/relu.h"
#include "ops/relu/relu_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

RG_OP_SPECS(relu) {
  const Call call = [](const Inputs& x) { return relu(x[0]); };
  return {{
      .name = "relu",
      // Inputs kept away from the kink at 0, where the derivative is undefined.
      .gradchecks = {{"away from the kink", call,
                      [] {
                        return Inputs{from_vector<double>({-1.5, -0.3, 0.2, 0.9, 2.0, -0.7}, {2, 3},
                                                          {DType::f64})
                                          .set_requires_grad(true)};
                      }}},
      .fixtures = {{"relu", {""}, {"x"}, call}},
      .bad_inputs = {{[] { relu(ones({2}, {DType::i64})); }, {"relu", "[2] i64 cpu"}}},
      .devices = {{"relu",
                   [] {
                     relu(on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 1)},
      .kernels = {pointwise_kernel<1>("relu", ReluFn{}),
                  pointwise_kernel<2>("relu_grad", ReluGradFn{})},
      .benches = {bandwidth_bench("relu", 1, call)},
  }};
}

}  // namespace rg::testing
