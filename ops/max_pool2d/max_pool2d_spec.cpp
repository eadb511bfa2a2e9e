// max_pool2d's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
// Its PyTorch parity (indices included) is in tests/ops/max_pool2d_test.cpp.
#include "ops/max_pool2d/max_pool2d.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

namespace {

Call pooled(Pool2dSize k, Pool2dSize s, Pool2dSize p, Pool2dSize d, CeilMode ceil) {
  return [=](const Inputs& x) { return max_pool2d(x[0], k, s, p, d, ceil).output; };
}

// airbench's 2×2/2 pool (default: its first, 64 channels of 31×31). Bytes: x read, y and its
// int64 indices written forward; gy and the indices read, gx written backward.
Bench airbench_pool() {
  const auto moved = [](const Inputs& in, const Tensor& y) {
    return static_cast<double>(in[0].nbytes() + y.nbytes()) + 8.0 * static_cast<double>(y.numel());
  };
  return {"max_pool2d",
          {256, 64, 31, 31},
          Cost::bytes,
          [](const Shape& s) {
            if (s.size() != 4) fail("bench_ops: a max pool's --shape is N,C,H,W (4 sizes)");
            return Inputs{uniform(s, kAnyValues)};
          },
          [](const Inputs& x) { return max_pool2d(x[0], 2).output; },
          moved,
          moved};
}

}  // namespace

RG_OP_SPECS(max_pool2d) {
  using C = CeilMode;
  // Random distinct values: no two in a window are within the finite-difference step, so the
  // argmax never flips during gradcheck.
  const auto input = [](Shape shape) { return [=] { return Inputs{grad_input(shape)}; }; };
  return {{
      .name = "max_pool2d",
      .gradchecks = {{"default stride", pooled(2, {}, 0, 1, C::off), input({1, 2, 4, 4})},
                     {"stride, padding", pooled(3, 2, 1, 1, C::off), input({2, 1, 5, 5})},
                     {"overlapping windows", pooled(3, 1, 0, 1, C::off), input({1, 1, 5, 5})},
                     {"dilation", pooled(2, 1, 1, 2, C::off), input({1, 1, 6, 5})},
                     {"rectangular", pooled({2, 3}, {1, 2}, {1, 0}, 1, C::off),
                      input({1, 1, 5, 6})},
                     {"ceil: a partial window", pooled(2, 2, 0, 1, C::on), input({1, 2, 5, 5})}},
      .bad_inputs = {{[] {
                        max_pool2d(ones({3, 4, 4}), 2);
                      },
                      {"max_pool2d", "4-D", "[3, 4, 4] f32 cpu"}},
                     {[] {
                        max_pool2d(ones({1, 1, 4, 4}, {DType::i64}), 2);
                      },
                      {"max_pool2d", "[1, 1, 4, 4] i64 cpu"}},
                     // Kernel larger than the padded input.
                     {[] {
                        max_pool2d(ones({1, 1, 3, 3}), 6, 1, 1);
                      },
                      {"max_pool2d", "too small", "[1, 1, 3, 3]", "(6, 6)"}},
                     // Padding more than half the kernel, refused as in PyTorch.
                     {[] {
                        max_pool2d(ones({1, 1, 8, 8}), 3, 1, 2);
                      },
                      {"max_pool2d", "padding (2, 2)", "half of kernel_size (3, 3)"}},
                     {[] {
                        max_pool2d(ones({1, 1, 8, 8}), {2, 0});
                      },
                      {"max_pool2d", "kernel_size must be positive", "(2, 0)"}},
                     {[] {
                        max_pool2d(ones({1, 1, 8, 8}), 2, -1);
                      },
                      {"max_pool2d", "stride must be positive"}},
                     {[] {
                        max_pool2d(ones({1, 1, 8, 8}), 2, 2, 0, 0);
                      },
                      {"max_pool2d", "dilation must be positive"}}},
      .devices = {{"max_pool2d",
                   [] {
                     max_pool2d(on_gpu({2, 3, 4, 4}), 2);
                   },
                   Stop::no_gpu}},
      .samples = {{"", {{2, 3, 9, 7}}, pooled(3, 2, 1, 1, C::off)},
                  // Disjoint windows (airbench's pool), whose backward is a thread per window.
                  {"2x2, odd sizes", {{2, 3, 9, 7}}, pooled(2, {}, 0, 1, C::off)},
                  // The NHWC kernels (max_pool2d_nhwc_*): disjoint and overlapping windows.
                  {"channels-last, 2x2",
                   {{2, 5, 9, 7}},
                   [](const Inputs& x) {
                     return max_pool2d(to_memory_format(x[0], MemoryFormat::channels_last), 2)
                         .output;
                   }},
                  {"channels-last, overlapping",
                   {{2, 5, 9, 7}},
                   [](const Inputs& x) {
                     return max_pool2d(to_memory_format(x[0], MemoryFormat::channels_last), 3, 2, 1)
                         .output;
                   }},
                  {"transposed, dilated",
                   {{2, 3, 9, 7}},
                   [](const Inputs& x) {
                     return max_pool2d(x[0].transpose(2, 3), {2, 3}, 1, 1, 2, C::on).output;
                   }}},
      .benches = {airbench_pool()},
  }};
}

}  // namespace rg::testing
