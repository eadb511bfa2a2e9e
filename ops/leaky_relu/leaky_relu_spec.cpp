// leaky_relu's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/leaky_relu/leaky_relu.h"
#include "ops/leaky_relu/leaky_relu_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

namespace {

Call with_slope(double slope) {
  return [slope](const Inputs& x) { return leaky_relu(x[0], slope); };
}

}  // namespace

RG_OP_SPECS(leaky_relu) {
  const Call call = [](const Inputs& x) { return leaky_relu(x[0]); };  // the default slope, 0.01
  // Inputs kept away from the kink at 0.
  const auto away_from_kink = [] {
    return Inputs{from_vector<double>({-1.5, -0.3, 0.2, 0.9, 2.0, -0.7}, {2, 3}, {DType::f64})
                      .set_requires_grad(true)};
  };
  std::vector<GradcheckCase> gradchecks = {{"default slope", call, away_from_kink}};
  for (double slope : {0.0, 0.2, -0.3, 1.5})
    gradchecks.push_back({"slope " + std::to_string(slope), with_slope(slope), away_from_kink});
  return {{
      .name = "leaky_relu",
      .gradchecks = gradchecks,
      .fixtures = {{"leaky_relu", {"default"}, {"x"}, with_slope(0.01)},
                   {"leaky_relu", {"s0_2"}, {"x"}, with_slope(0.2)},
                   {"leaky_relu", {"s0"}, {"x"}, with_slope(0.0)},
                   {"leaky_relu", {"sneg"}, {"x"}, with_slope(-0.3)}},
      .bad_inputs = {{[] { leaky_relu(ones({2}, {DType::i64})); }, {"leaky_relu", "[2] i64 cpu"}}},
      .devices = {{"leaky_relu",
                   [] {
                     leaky_relu(on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 1)},
      .kernels = {pointwise_kernel<1>("leaky_relu", LeakyReluFn{0.1}),
                  pointwise_kernel<2>("leaky_relu_grad", LeakyReluGradFn{0.1})},
      .benches = {bandwidth_bench("leaky_relu", 1, call)},
  }};
}

}  // namespace rg::testing
