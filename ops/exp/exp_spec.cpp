// exp's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/exp/exp.h"
#include "ops/exp/exp_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

RG_OP_SPECS(exp) {
  const Call call = [](const Inputs& x) { return exp(x[0]); };
  return {{
      .name = "exp",
      .gradchecks = unary_gradchecks([](const Tensor& x) { return exp(x); }, -2, 2),
      .fixtures = {{"exp", {"small", "wide", "extreme"}, {"x"}, call}},
      .bad_inputs = integer_inputs("exp", [](const Tensor& x) { exp(x); }),
      .devices = {{"exp",
                   [] {
                     exp(on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 1)},
      .kernels = {pointwise_kernel<1>("exp", ExpFn{})},
      .benches = {bandwidth_bench("exp", 1, call)},
  }};
}

}  // namespace rg::testing
