// max_pool3d's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
// Its PyTorch parity (indices included) is in tests/ops/max_pool3d_test.cpp.
#include "ops/max_pool3d/max_pool3d.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

namespace {

Call pooled(Pool3dSize k, Pool3dSize s, Pool3dSize p, Pool3dSize d) {
  return [=](const Inputs& x) { return max_pool3d(x[0], k, s, p, d).output; };
}

}  // namespace

RG_OP_SPECS(max_pool3d) {
  // Random distinct values: no two in a window are within the finite-difference step, so the
  // argmax never flips during gradcheck.
  const auto input = [](Shape shape) { return [=] { return Inputs{grad_input(shape)}; }; };
  return {{
      .name = "max_pool3d",
      .gradchecks = {{"default stride", pooled(2, {}, 0, 1), input({1, 2, 4, 4, 2})},
                     {"stride, padding", pooled(3, 2, 1, 1), input({1, 1, 5, 4, 5})},
                     {"overlapping windows", pooled(2, 1, 0, 1), input({1, 1, 3, 4, 4})},
                     {"dilation", pooled(2, 1, {1, 0, 1}, {2, 1, 2}), input({1, 1, 5, 3, 5})},
                     {"anisotropic", pooled({1, 3, 2}, {1, 2, 1}, {0, 1, 0}, 1),
                      input({2, 1, 2, 5, 4})}},
      .bad_inputs = {{[] {
                        max_pool3d(ones({1, 2, 4, 4}), 2);
                      },
                      {"max_pool3d", "5-D", "[1, 2, 4, 4] f32 cpu"}},
                     {[] {
                        max_pool3d(ones({1, 2, 4, 4, 4}), {2, 0, 2});
                      },
                      {"max_pool3d", "kernel_size (2, 0, 2)"}},
                     {[] {
                        max_pool3d(ones({1, 2, 4, 4, 4}), 2, {1, 1, -1});
                      },
                      {"max_pool3d", "stride (1, 1, -1)"}},
                     {[] {
                        max_pool3d(ones({1, 2, 4, 4, 4}), 2, 2, 2);
                      },
                      {"max_pool3d", "padding (2, 2, 2)", "half the kernel_size"}},
                     {[] {
                        max_pool3d(ones({1, 2, 4, 1, 4}), 2);
                      },
                      {"max_pool3d", "output size", "[1, 2, 4, 1, 4]"}},
                     {[] {
                        max_pool3d(ones({1, 2, 4, 4, 4}, {DType::i64}), 2);
                      },
                      {"max_pool3d", "i64"}}},
      .devices = {{"max_pool3d",
                   [] {
                     max_pool3d(on_gpu({1, 2, 4, 4, 4}), 2);
                   },
                   Stop::no_gpu}},
      .samples = {{"", {{2, 2, 5, 7, 6}}, pooled(3, 2, 1, 1)},
                  {"transposed, anisotropic",
                   {{1, 2, 4, 8, 7}},
                   [](const Inputs& x) {
                     return max_pool3d(x[0].transpose(3, 4), {1, 2, 2}).output;
                   }}},
  }};
}

}  // namespace rg::testing
