// max's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/max/max.h"
#include "ops/max/max_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

RG_OP_SPECS(max) {
  const Call all = [](const Inputs& x) { return max(x[0]); };
  const auto along = [](int64_t dim, KeepDim keep) -> Call {
    return [=](const Inputs& x) { return max(x[0], dim, keep).values; };
  };
  // grad_input draws distinct values, so no lane has a tie (where max is not differentiable).
  const auto input = [](Shape shape) { return [=] { return Inputs{grad_input(shape)}; }; };
  return {{
      .name = "max",
      .gradchecks = {{"all", all, input({2, 3, 2})},
                     {"dim 1", along(1, KeepDim::no), input({2, 3, 2})},
                     {"dim 1 kept", along(1, KeepDim::yes), input({2, 3, 2})},
                     {"dim 0", along(0, KeepDim::no), input({3, 2})},
                     {"dim -1 kept", along(-1, KeepDim::yes), input({2, 2, 3})},
                     {"transposed",
                      [](const Inputs& x) { return max(x[0].transpose(0, 1), 1).values; },
                      input({3, 2})}},
      // ties: gy split 3 ways. Along a dim, tests/ops/max_test.cpp checks the indices too.
      .fixtures = {{"max", {"all", "ties"}, {"x"}, all}},
      .bad_inputs = {{[] {
                        max(zeros({0, 3}));
                      },
                      {"max", "empty", "[0, 3] f32 cpu"}},
                     {[] {
                        max(zeros({2, 0}), 1);
                      },
                      {"max", "dim 1", "[2, 0] f32 cpu"}},
                     {[] {
                        max(ones({2, 3}), 2);
                      },
                      {"max", "dim 2", "out of range"}},
                     {[] {
                        max(ones({2, 3}), -3);
                      },
                      {"max", "dim -3", "out of range"}},
                     {[] { max(ones({2}, {DType::i64})); }, {"max", "[2] i64 cpu"}},
                     {[] { max(ones({2}, {DType::i64}), 0); }, {"max", "[2] i64 cpu"}}},
      .devices = {{"all",
                   [] {
                     max(on_gpu({2, 3}));
                   },
                   Stop::no_gpu},
                  {"along a dim",
                   [] {
                     max(on_gpu({2, 3}), 1);
                   },
                   Stop::no_gpu}},
      .samples = {{"all", {{3, 37, 5}}, all},
                  {"dim", {{3, 37, 5}}, along(1, KeepDim::no)},
                  {"last dim", {{3, 37, 5}}, along(-1, KeepDim::yes)}},
      .kernels = {pointwise_kernel<3>("max_all_grad", MaxAllGradFn{0.5})},
  }};
}

}  // namespace rg::testing
