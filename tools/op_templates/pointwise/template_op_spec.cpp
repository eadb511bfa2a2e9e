// template_op's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/template_op/template_op.h"
#include "ops/template_op/template_op_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

RG_OP_SPECS(template_op) {
  const Call call = [](const Inputs& x) { return template_op(x[0]); };
  return {{
      .name = "template_op",
      .gradchecks = unary_gradchecks([](const Tensor& x) { return template_op(x); }, -2, 2),
      // tests/fixtures/template_op.safetensors, from template_op_fixture.py
      .fixtures = {{"template_op", {"small", "wide"}, {"x"}, call}},
      .bad_inputs = integer_inputs("template_op", [](const Tensor& x) { template_op(x); }),
      .devices = {{"template_op",
                   [] {
                     template_op(on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 1)},
      .kernels = {pointwise_kernel<1>("template_op", TemplateOpFn{}),
                  pointwise_kernel<2>("template_op_grad", TemplateOpGradFn{})},
      .benches = {bandwidth_bench("template_op", 1, call)},
  }};
}

}  // namespace rg::testing
