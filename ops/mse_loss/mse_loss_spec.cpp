// mse_loss's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/mse_loss/mse_loss.h"
#include "ops/mse_loss/mse_loss_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

RG_OP_SPECS(mse_loss) {
  std::vector<GradcheckCase> gradchecks;
  std::vector<FixtureCase> fixtures;
  for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
    const std::string name(reduction_name(r));  // also the fixture's case
    const Call call = [r](const Inputs& x) { return mse_loss(x[0], x[1], r); };
    gradchecks.push_back({name, call, [] {
                            return Inputs{grad_input({2, 3}), grad_input({2, 3}, -1, 1, 2)};
                          }});
    fixtures.push_back({"mse_loss", {name}, {"x", "t"}, call});
  }
  return {{
      .name = "mse_loss",
      .gradchecks = gradchecks,
      .fixtures = fixtures,
      .bad_inputs = {{[] {
                        mse_loss(zeros({2, 3}), zeros({3}));
                      },
                      {"mse_loss", "[3] f32 cpu", "[2, 3] f32 cpu"}},
                     {[] { mse_loss(zeros({2}), zeros({2}, {DType::f64})); },
                      {"mse_loss", "dtype mismatch"}},
                     {[] { mse_loss(zeros({2}, {DType::i64}), zeros({2}, {DType::i64})); },
                      {"mse_loss", "[2] i64 cpu"}}},
      .devices = {{"mixed devices",
                   [] {
                     mse_loss(on_gpu({2, 3}), ones({2, 3}));
                   }},
                  {"on cuda:0",
                   [] {
                     mse_loss(on_gpu({2, 3}), on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {{"",
                   {{3, 37, 5}, {3, 37, 5}},
                   [](const Inputs& x) { return mse_loss(x[0], x[1]); },
                   kUnitValues}},
      .kernels = {pointwise_kernel<2>("squared_error", SquaredErrorFn{}),
                  pointwise_kernel<3>("squared_error_grad", SquaredErrorGradFn{0.25})},
  }};
}

}  // namespace rg::testing
