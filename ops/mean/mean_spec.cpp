// mean's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/mean/mean.h"
#include "tests/support/reduction_spec.h"

namespace rg::testing {

RG_OP_SPECS(mean) {
  const auto over = [](std::vector<int64_t> dims, KeepDim keep) -> Call {
    return [=](const Inputs& x) { return mean(x[0], dims, keep); };
  };
  OpSpec spec{
      .name = "mean",
      .bad_inputs = {{[] {
                        mean(ones({2, 3}), {5});
                      },
                      {"mean", "dim 5", "out of range"}},
                     {[] {
                        mean(ones({2, 3}), {0, 0});
                      },
                      {"mean", "more than once", "[2, 3]"}},
                     {[] { mean(ones({2}, {DType::i64})); }, {"mean", "[2] i64 cpu"}}},
      .devices = {{"mean",
                   [] {
                     mean(on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {{"dim 1", {{3, 37, 5}}, over({1}, KeepDim::no)}},
      .benches = {bandwidth_bench("mean", 1, over({-1}, KeepDim::no))},
  };
  add_reduction_parts(
      spec, [](const Tensor& x) { return mean(x); },
      [](const Tensor& x, const std::vector<int64_t>& dims, KeepDim keep) {
        return mean(x, dims, keep);
      });
  return {spec};
}

}  // namespace rg::testing
