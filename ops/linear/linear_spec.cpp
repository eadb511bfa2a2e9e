// linear's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it. Its
// gradchecks, PyTorch parity and bad inputs are in tests/ops/linear_test.cpp.
#include "ops/linear/linear.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

RG_OP_SPECS(linear) {
  return {{
      .name = "linear",
      .devices = {{"on cuda:0",
                   [] {
                     linear(on_gpu({2, 3}), on_gpu({4, 3}));
                   },
                   Stop::no_gpu},
                  {"weight on cuda:0",
                   [] {
                     linear(ones({2, 3}), on_gpu({4, 3}));
                   }}},
      .samples = {{"with bias",
                   {{3, 37, 5}, {11, 5}, {11}},
                   [](const Inputs& x) { return linear(x[0], x[1], x[2]); },
                   kSignedUnitValues},
                  {"no bias",
                   {{37, 5}, {11, 5}},
                   [](const Inputs& x) { return linear(x[0], x[1]); },
                   kSignedUnitValues}},
  }};
}

}  // namespace rg::testing
