// template_op's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include <utility>

#include "ops/template_op/template_op.h"
#include "ops/template_op/template_op_kernel.h"
#include "ops/template_op/template_op_kernels.cuh"
#include "tests/support/op_spec.h"

namespace rg::testing {

namespace {

// The CUDA kernels (template_op_kernels.cuh, emulated) against the CPU kernels, forward and
// backward, in every floating dtype: more rows than blocks, rows longer than a block, a row of one
// element; empty tensors launch nothing. The sums differ in order (a tree against a loop in
// double), hence Match::device_parity.
std::vector<KernelResult> kernels_against_the_cpu() {
  std::vector<KernelResult> results;
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{5, 301}, {7, 1}}) {
      const std::string where =
          std::string(dtype_name(dtype)) + " " + std::to_string(rows) + "x" + std::to_string(cols);
      const Tensor x = uniform({rows, cols}, kAnyValues).to(dtype);
      const Tensor gy = uniform({rows}, kAnyValues).to(dtype);
      const Tensor y_cpu = empty({rows}, {dtype}), y_emu = empty({rows}, {dtype});
      template_op_forward_cpu(y_cpu, x, rows, cols);
      launch_template_op_forward(y_emu, x, rows, cols, nullptr);
      results.push_back({"forward " + where, y_emu, y_cpu, Match::device_parity});
      const Tensor gx_cpu = empty({rows, cols}, {dtype}), gx_emu = empty({rows, cols}, {dtype});
      template_op_backward_cpu(gx_cpu, gy, x, rows, cols);
      launch_template_op_backward(gx_emu, gy, x, rows, cols, nullptr);
      results.push_back({"backward " + where, gx_emu, gx_cpu});
    }
  const Tensor none = empty({0, 3});  // a launch of 0 blocks would be an error
  launch_template_op_forward(empty({0}), none, 0, 3, nullptr);
  launch_template_op_backward(empty({0, 3}), empty({0}), none, 0, 3, nullptr);
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
      .bad_inputs =
          [] {
            std::vector<BadInput> bad =
                integer_inputs("template_op", [](const Tensor& x) { template_op(x); });
            bad.push_back(
                {[] { template_op(ones({})); }, {"template_op", "dim to sum over", "[] f32 cpu"}});
            return bad;
          }(),
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
