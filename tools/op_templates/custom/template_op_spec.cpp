// template_op's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/template_op/template_op.h"
#include "ops/template_op/template_op_kernel.h"
#include "ops/template_op/template_op_kernels.cuh"
#include "tests/support/op_spec.h"

namespace rg::testing {

namespace {

// The CUDA kernels (template_op_kernels.cuh, emulated) against the CPU kernels, forward and
// backward, in every floating dtype, on sizes that leave partial blocks; empty tensors launch
// nothing.
std::vector<KernelResult> kernels_against_the_cpu() {
  std::vector<KernelResult> results;
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (const Shape& shape : {Shape{1}, Shape{3, 367}}) {  // 1101: several blocks, a partial one
      const std::string where = std::string(dtype_name(dtype)) + " " + shape_str(shape);
      const Tensor x = uniform(shape, kAnyValues).to(dtype),
                   gy = uniform(shape, kAnyValues).to(dtype);
      const Tensor y_cpu = empty(shape, {dtype}), y_emu = empty(shape, {dtype});
      template_op_forward_cpu(y_cpu, x);
      launch_template_op_forward(y_emu, x, nullptr);
      results.push_back({"forward " + where, y_emu, y_cpu});
      const Tensor gx_cpu = empty(shape, {dtype}), gx_emu = empty(shape, {dtype});
      template_op_backward_cpu(gx_cpu, gy, x);
      launch_template_op_backward(gx_emu, gy, x, nullptr);
      results.push_back({"backward " + where, gx_emu, gx_cpu});
    }
  const Tensor none = empty({0, 3});  // a launch of 0 blocks would be an error
  launch_template_op_forward(empty({0, 3}), none, nullptr);
  launch_template_op_backward(empty({0, 3}), none, none, nullptr);
  return results;
}

}  // namespace

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
      .kernels = {{"forward and backward", kernels_against_the_cpu}},
      .benches = {bandwidth_bench("template_op", 1, call)},
  }};
}

}  // namespace rg::testing
