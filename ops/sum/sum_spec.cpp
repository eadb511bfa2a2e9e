// sum's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/sum/sum.h"
#include "tests/support/reduction_spec.h"

namespace rg::testing {

RG_OP_SPECS(sum) {
  const auto over = [](std::vector<int64_t> dims, KeepDim keep) -> Call {
    return [=](const Inputs& x) { return sum(x[0], dims, keep); };
  };
  OpSpec spec{
      .name = "sum",
      .bad_inputs = {{[] {
                        sum(ones({2, 3}), {2});
                      },
                      {"sum", "dim 2", "out of range"}},
                     {[] {
                        sum(ones({2, 3}), {-3});
                      },
                      {"sum", "dim -3", "out of range"}},
                     {[] {
                        sum(ones({2, 3}), {1, -1});
                      },
                      {"sum", "more than once", "[2, 3]"}},
                     {[] { sum(ones({2}, {DType::i64})); }, {"sum", "[2] i64 cpu"}}},
      .devices = {{"sum",
                   [] {
                     sum(on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {{"dims 0, 2", {{3, 37, 5}}, over({0, 2}, KeepDim::no)}},
      .benches = {bandwidth_bench("sum", 1, over({-1}, KeepDim::no))},
  };
  add_reduction_parts(
      spec, [](const Tensor& x) { return sum(x); },
      [](const Tensor& x, const std::vector<int64_t>& dims, KeepDim keep) {
        return sum(x, dims, keep);
      });
  // An empty list of dims reduces every dim.
  spec.gradchecks.push_back({"no dims: every dim", over({}, KeepDim::yes), [] {
                               return Inputs{grad_input({3, 2})};
                             }});
  return {spec};
}

}  // namespace rg::testing
