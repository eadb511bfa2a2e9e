// matmul's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it. Its
// gradchecks, PyTorch parity and bad inputs are in tests/ops/matmul_test.cpp.
#include "ops/matmul/matmul.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

RG_OP_SPECS(matmul) {
  const Call call = [](const Inputs& x) { return matmul(x[0], x[1]); };
  return {{
      .name = "matmul",
      .devices = {{"on cuda:0",
                   [] {
                     matmul(on_gpu({2, 3}), on_gpu({3, 2}));
                   },
                   Stop::no_gpu},
                  {"b on cuda:0",
                   [] {
                     matmul(ones({2, 3}), on_gpu({3, 2}));
                   }}},
      // Batched, broadcast (the gradient sums over the batch), transposed operands read in place.
      .samples = {{"batched", {{3, 37, 5}, {3, 5, 7}}, call, kSignedUnitValues},
                  {"broadcast", {{37, 5}, {3, 5, 7}}, call, kSignedUnitValues},
                  {"2-d weight", {{3, 37, 5}, {5, 7}}, call, kSignedUnitValues},
                  {"transposed",
                   {{3, 5, 37}, {3, 7, 5}},
                   [](const Inputs& x) {
                     return matmul(x[0].transpose(1, 2), x[1].transpose(1, 2));
                   },
                   kSignedUnitValues},
                  {"vector", {{37}, {37, 5}}, call, kSignedUnitValues}},
      .benches = {gemm_bench("matmul", call)},
  }};
}

}  // namespace rg::testing
