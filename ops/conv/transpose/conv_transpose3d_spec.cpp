// conv_transpose3d's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on
// it. Its gradchecks, PyTorch parity and bad inputs are in tests/ops/conv_transpose3d_test.cpp.
#include "ops/conv/conv.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

RG_OP_SPECS(conv_transpose3d) {
  return {{
      .name = "conv_transpose3d",
      .devices = {{"on cuda:0",
                   [] {
                     conv_transpose3d(on_gpu({1, 2, 3, 3, 3}), on_gpu({2, 2, 2, 2, 2}));
                   },
                   Stop::no_gpu}},
      .samples = {{"stride 2, with bias",
                   {{2, 4, 3, 4, 5}, {4, 3, 2, 2, 2}, {3}},
                   [](const Inputs& x) {
                     return conv_transpose3d(x[0], x[1], x[2], {2, 2, 2});
                   },
                   kSignedUnitValues}},
  }};
}

}  // namespace rg::testing
