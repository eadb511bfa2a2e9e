// softmax's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include <utility>

#include "ops/add/add.h"
#include "ops/mul/mul.h"
#include "ops/softmax/softmax.h"
#include "ops/softmax/softmax_kernels.cuh"
#include "tests/support/op_spec.h"

namespace rg::testing {

namespace {

// The GPU kernels of softmax and log_softmax (softmax_kernels.cuh, emulated) against the CPU
// kernels, forward and backward: every dtype, the last dim and a middle dim, lengths below, at and
// above the block size. Sums differ in order (a tree of floats against the CPU's doubles).
std::vector<KernelResult> kernels_against_the_cpu() {
  using detail::SoftmaxKind;
  const auto values = [](const Shape& shape, DType dtype, double scale) {
    return mul(add(rand(shape, {DType::f64}), -0.5), 2 * scale).to(dtype);
  };
  // Lanes along the last dim (shorter and longer than a block) and along a middle dim.
  const std::pair<Shape, int64_t> cases[] = {
      {{3, 37}, 1}, {{2, 150}, 1}, {{2, 5, 3}, 1}, {{1, 1}, 0}};
  std::vector<KernelResult> results;
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (SoftmaxKind kind : {SoftmaxKind::softmax, SoftmaxKind::log_softmax})
      for (const auto& [shape, dim] : cases) {
        const std::string where =
            std::string(kind == SoftmaxKind::softmax ? "softmax " : "log_softmax ") +
            std::string(dtype_name(dtype)) + " " + shape_str(shape) + " dim " + std::to_string(dim);
        const Tensor x = values(shape, dtype, 8.0);  // large logits: the max shift matters
        const Tensor expected = detail::softmax_forward(OnCpu{}, x, dim, kind);
        const Tensor y = empty(shape, {dtype});
        launch_softmax(x, y, dim, kind, nullptr);
        results.push_back({where, y, expected, Match::device_parity});

        const Tensor gy = values(shape, dtype, 1.0);
        const Tensor expected_gx = detail::softmax_backward(OnCpu{}, gy, expected, dim, kind);
        const Tensor gx = empty(shape, {dtype});
        launch_softmax_backward(gy, expected, gx, dim, kind, nullptr);
        results.push_back({"backward " + where, gx, expected_gx, Match::device_parity});
      }
  return results;
}

}  // namespace

RG_OP_SPECS(softmax) {
  const auto along = [](int64_t dim) -> Call {
    return [=](const Inputs& x) { return softmax(x[0], dim); };
  };
  std::vector<GradcheckCase> gradchecks;
  for (int64_t dim : {0, 1, 2, -1})
    gradchecks.push_back({"dim " + std::to_string(dim), along(dim), [] {
                            return Inputs{grad_input({2, 3, 2}, -2, 2)};
                          }});
  gradchecks.push_back({"transposed",
                        [](const Inputs& x) { return softmax(x[0].transpose(0, 1), 1); },
                        [] {
                          return Inputs{grad_input({3, 2}, -2, 2)};
                        }});
  return {{
      .name = "softmax",
      .gradchecks = gradchecks,
      .fixtures = {{"softmax", {"last"}, {"x"}, along(-1)},
                   {"softmax", {"d1", "big"}, {"x"}, along(1)},
                   {"softmax", {"d0"}, {"x"}, along(0)}},
      .bad_inputs = {{[] {
                        softmax(ones({2, 3}), 2);
                      },
                      {"softmax", "dim 2", "out of range"}},
                     {[] {
                        softmax(ones({2, 3}), -3);
                      },
                      {"softmax", "dim -3", "out of range"}},
                     {[] { softmax(ones({2}, {DType::i64}), 0); }, {"softmax", "[2] i64 cpu"}}},
      .devices = {{"softmax",
                   [] {
                     softmax(on_gpu({2, 3}), 1);
                   },
                   Stop::no_gpu}},
      .samples = {{"dim 1", {{3, 37, 5}}, along(1)}},
      // log_softmax's kernels too: they are one header, softmax_kernels.cuh.
      .kernels = {{"softmax and log_softmax", kernels_against_the_cpu}},
      .benches = {bandwidth_bench("softmax", 1, along(-1))},
  }};
}

}  // namespace rg::testing
