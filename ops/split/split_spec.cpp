// split's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it. Its
// gradchecks and PyTorch parity (several outputs) are in tests/ops/split_test.cpp.
#include "ops/cat/cat.h"
#include "ops/mul/mul.h"
#include "ops/split/split.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

RG_OP_SPECS(split) {
  return {{
      .name = "split",
      .bad_inputs = {{[] {
                        split(ones({2, 5}), std::vector<int64_t>{2, 2}, 1);
                      },
                      {"split", "[2, 2]", "sum to 4", "[2, 5] f32 cpu", "size 5"}},
                     {[] {
                        split(ones({2, 5}), std::vector<int64_t>{6, -1}, 1);
                      },
                      {"split", "non-negative", "[6, -1]"}},
                     {[] {
                        split(ones({2, 5}), 0, 1);
                      },
                      {"split", "split_size", "[2, 5] f32 cpu"}},
                     {[] {
                        split(ones({2, 5}), 2, 2);
                      },
                      {"split", "dim"}},
                     {[] { split(scalar_tensor(1), 1, 0); }, {"split", "zero-dimensional"}}},
      // The pieces (views) put back together with different weights.
      .samples = {{"",
                   {{3, 37, 5}},
                   [](const Inputs& x) {
                     const std::vector<Tensor> parts = split(x[0], {10, 20, 7}, 1);
                     return cat({mul(parts[2], 3.0), parts[0], mul(parts[1], -1.0)}, 1);
                   }}},
  }};
}

}  // namespace rg::testing
