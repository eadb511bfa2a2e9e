// conv3d's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it. Its
// gradchecks, PyTorch parity and bad inputs are in tests/ops/conv3d_test.cpp.
#include "ops/conv/conv.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

RG_OP_SPECS(conv3d) {
  return {{
      .name = "conv3d",
      .devices = {{"on cuda:0",
                   [] {
                     conv3d(on_gpu({1, 2, 3, 3, 3}), on_gpu({2, 2, 1, 1, 1}));
                   },
                   Stop::no_gpu}},
      .samples = {{"padded, with bias",
                   {{2, 3, 5, 6, 7}, {4, 3, 3, 3, 3}, {4}},
                   [](const Inputs& x) {
                     return conv3d(x[0], x[1], x[2], {1, 1, 1}, {1, 1, 1});
                   },
                   kSignedUnitValues},
                  {"strided, grouped",
                   {{1, 4, 6, 7, 5}, {6, 2, 3, 3, 3}},
                   [](const Inputs& x) {
                     return conv3d(x[0], x[1], Tensor(), {2, 2, 1}, {1, 0, 1}, {1, 1, 1}, 2);
                   },
                   kSignedUnitValues}},
  }};
}

}  // namespace rg::testing
