// dropout's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "core/rng.h"
#include "ops/dropout/dropout.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

RG_OP_SPECS(dropout) {
  std::vector<GradcheckCase> gradchecks;
  for (double p : {0.0, 0.3, 1.0})
    gradchecks.push_back({"p = " + std::to_string(p),
                          [p](const Inputs& x) {
                            Generator g(42);  // the same mask on every call
                            return dropout(x[0], p, DropoutMode::train, g);
                          },
                          [] {
                            return Inputs{grad_input({3, 5})};
                          }});
  gradchecks.push_back({"eval",
                        [](const Inputs& x) { return dropout(x[0], 0.5, DropoutMode::eval); },
                        [] { return Inputs{grad_input({4})}; }});
  return {{
      .name = "dropout",
      .gradchecks = gradchecks,
      .bad_inputs = {{[] {
                        dropout(ones({2, 3}), 1.5, DropoutMode::train);
                      },
                      {"dropout", "[0, 1]", "1.5", "[2, 3] f32 cpu"}},
                     {[] { dropout(ones({2}), -0.1, DropoutMode::eval); }, {"dropout", "-0.1"}},
                     {[] {
                        dropout(ones({2, 3}, {DType::i64}), 0.5, DropoutMode::train);
                      },
                      {"dropout", "[2, 3] i64 cpu"}}},
      .devices = {{"dropout",
                   [] {
                     dropout(on_gpu({2, 3}), 0.5, DropoutMode::train);
                   },
                   Stop::no_gpu}},
      // A fresh generator with the same seed on each device: equal outputs mean the GPU kept
      // exactly the CPU's elements.
      .samples = {{"",
                   {{2, 3, 9, 7}},
                   [](const Inputs& x) {
                     Generator generator(99);
                     return dropout(x[0], 0.4, DropoutMode::train, generator);
                   }}},
  }};
}

}  // namespace rg::testing
