// conv2d's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it. Its
// gradchecks, PyTorch parity and bad inputs are in tests/ops/conv2d_test.cpp; bench_ops'
// --model runs time its kernels on whole networks' layers.
#include "ops/conv/conv.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

RG_OP_SPECS(conv2d) {
  return {{
      .name = "conv2d",
      .devices = {{"on cuda:0",
                   [] {
                     conv2d(on_gpu({2, 3, 4, 4}), on_gpu({4, 3, 3, 3}));
                   },
                   Stop::no_gpu},
                  {"weight on cuda:0",
                   [] {
                     conv2d(ones({2, 3, 4, 4}), on_gpu({4, 3, 3, 3}));
                   }}},
      .samples = {{"padded, with bias",
                   {{2, 3, 9, 9}, {4, 3, 3, 3}, {4}},
                   [](const Inputs& x) {
                     return conv2d(x[0], x[1], x[2], {1, 1}, {1, 1});
                   },
                   kSignedUnitValues},
                  {"strided, grouped",
                   {{2, 4, 9, 9}, {6, 2, 3, 3}},
                   [](const Inputs& x) {
                     return conv2d(x[0], x[1], Tensor(), {2, 2}, {1, 1}, {1, 1}, 2);
                   },
                   kSignedUnitValues},
                  // cuDNN in NHWC on a GPU (ops/conv/conv_cuda.cu); the CPU converts at entry.
                  {"channels-last, with bias",
                   {{2, 8, 9, 9}, {16, 8, 3, 3}, {16}},
                   [](const Inputs& x) {
                     return conv2d(to_memory_format(x[0], MemoryFormat::channels_last), x[1], x[2],
                                   {1, 1}, {1, 1});
                   },
                   kSignedUnitValues}},
  }};
}

}  // namespace rg::testing
