// silu's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/mul/mul.h"
#include "ops/sigmoid/sigmoid.h"
#include "ops/silu/silu.h"
#include "ops/silu/silu_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

RG_OP_SPECS(silu) {
  const Call call = [](const Inputs& x) { return silu(x[0]); };
  return {{
      .name = "silu",
      .gradchecks = unary_gradchecks([](const Tensor& x) { return silu(x); }, -2, 2),
      .fixtures = {{"silu", {"small", "wide"}, {"x"}, call}},
      .bad_inputs = integer_inputs("silu", [](const Tensor& x) { silu(x); }),
      .devices = {{"silu",
                   [] {
                     silu(on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 1)},
      .kernels = {pointwise_kernel<1>("silu", SiluFn{}),
                  pointwise_kernel<2>("silu_grad", SiluGradFn{})},
      .benches = {bandwidth_bench("silu", 1, call),
                  // its composition, for the fused kernel's speed-up (ops/README.md)
                  bandwidth_bench("silu_unfused", 1,
                                  [](const Inputs& x) { return mul(x[0], sigmoid(x[0])); })},
  }};
}

}  // namespace rg::testing
