// div's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/div/div.h"
#include "ops/div/div_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

namespace {

// Divisors in [0.5, 1.5) or (-1.5, -0.5]: away from 0, where 1/b explodes.
enum class Sign { positive, negative };
Tensor divisor(const Shape& shape, Sign sign = Sign::positive) {
  return sign == Sign::negative ? grad_input(shape, -1.5, -0.5, 2) : grad_input(shape, 0.5, 1.5, 2);
}

}  // namespace

RG_OP_SPECS(div) {
  const Call call = [](const Inputs& x) { return div(x[0], x[1]); };
  const auto inputs = [](Shape a, Shape b, Sign sign = Sign::positive) {
    return [=] { return Inputs{grad_input(a), divisor(b, sign)}; };
  };
  return {{
      .name = "div",
      .gradchecks = {{"same shape", call, inputs({2, 3}, {2, 3})},
                     {"negative divisor", call, inputs({2, 3}, {2, 3}, Sign::negative)},
                     {"b broadcast", call, inputs({2, 3, 2}, {3, 1})},
                     {"a broadcast", call, inputs({3}, {2, 3})},
                     {"both broadcast", call, inputs({2, 1, 3}, {4, 1}, Sign::negative)},
                     {"by a scalar", [](const Inputs& x) { return x[0] / 2.5; },
                      [] {
                        return Inputs{grad_input({2, 3})};
                      }},
                     {"a scalar by", [](const Inputs& x) { return 2.5 / x[0]; },
                      [] {
                        return Inputs{divisor({2, 3})};
                      }},
                     {"div(s, x)", [](const Inputs& x) { return div(-1.0, x[0]); },
                      [] { return Inputs{divisor({4}, Sign::negative)}; }}},
      .fixtures = {{"div",
                    {"same", "bcast_b", "bcast_both"},
                    {"a", "b"},
                    [](const Inputs& x) { return x[0] / x[1]; }},
                   {"div", {"scalar"}, {"a"}, [](const Inputs& x) { return x[0] / 1.7; }},
                   {"div", {"rscalar"}, {"a"}, [](const Inputs& x) { return 2.0 / x[0]; }}},
      .bad_inputs = {{[] {
                        div(ones({2, 3}), ones({3, 2}));
                      },
                      {"div", "[2, 3]", "[3, 2]", "broadcast"}},
                     {[] { div(ones({2}, {DType::bf16}), ones({2}, {DType::f64})); },
                      {"div", "dtype mismatch", "[2] bf16 cpu", "[2] f64 cpu"}},
                     {[] { div(1.0, ones({2}, {DType::i64})); }, {"div", "[2] i64 cpu"}}},
      .devices = {{"mixed devices",
                   [] {
                     div(on_gpu({2, 3}), ones({2, 3}));
                   }},
                  {"on cuda:0",
                   [] {
                     div(on_gpu({2, 3}), on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 2, kPositiveValues)},
      .kernels = {pointwise_kernel<2>("div", DivFn{}, kPositiveValues),
                  pointwise_kernel<1>("div_scalar", DivScalarFn{3.0}),
                  pointwise_kernel<1>("rdiv_scalar", RdivScalarFn{3.0}, kPositiveValues),
                  pointwise_kernel<3>("div_grad_other", DivGradOtherFn{}, kPositiveValues),
                  pointwise_kernel<2>("rdiv_grad", RdivGradFn{3.0}, kPositiveValues)},
      .benches = {bandwidth_bench("div", 2, call, kPositiveValues)},
  }};
}

}  // namespace rg::testing
