// mul's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/mul/mul.h"
#include "ops/mul/mul_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

RG_OP_SPECS(mul) {
  const Call call = [](const Inputs& x) { return mul(x[0], x[1]); };
  const auto inputs = [](Shape a, Shape b) {
    return [=] { return Inputs{grad_input(a), grad_input(b, -1, 1, 2)}; };
  };
  const auto one_input = [](Shape a) { return [=] { return Inputs{grad_input(a)}; }; };
  return {{
      .name = "mul",
      .gradchecks =
          {{"same shape", call, inputs({2, 3}, {2, 3})},
           {"b broadcast", call, inputs({2, 3, 2}, {3, 1})},
           {"a broadcast", call, inputs({3}, {2, 3})},
           {"both broadcast", call, inputs({2, 1, 3}, {4, 1})},
           // A non-contiguous operand, and the same tensor on both sides (x · x: gradient 2x).
           {"transposed", [](const Inputs& x) { return x[0].transpose(0, 1) * x[1]; },
            inputs({3, 2}, {2, 3})},
           {"x * x", [](const Inputs& x) { return x[0] * x[0]; }, one_input({5})},
           {"times a scalar", [](const Inputs& x) { return x[0] * 2.5; }, one_input({2, 3})},
           {"scalar times", [](const Inputs& x) { return -0.5 * x[0]; }, one_input({2, 3})}},
      .fixtures = {{"mul",
                    {"same", "bcast_b", "bcast_both"},
                    {"a", "b"},
                    [](const Inputs& x) { return x[0] * x[1]; }},
                   {"mul", {"scalar"}, {"a"}, [](const Inputs& x) { return x[0] * 1.5; }},
                   {"mul", {"rscalar"}, {"a"}, [](const Inputs& x) { return -0.75 * x[0]; }},
                   {"mul", {"square"}, {"x"}, [](const Inputs& x) { return x[0] * x[0]; }}},
      .bad_inputs = {{[] {
                        mul(ones({2, 3}), ones({2}));
                      },
                      {"mul", "[2, 3]", "[2]", "broadcast"}},
                     {[] { mul(ones({2}, {DType::f16}), ones({2})); },
                      {"mul", "dtype mismatch", "[2] f16 cpu", "[2] f32 cpu"}},
                     {[] { mul(ones({2}, {DType::i64}), 2.0); }, {"mul", "[2] i64 cpu"}}},
      .devices = {{"mul",
                   [] {
                     mul(on_gpu({2, 3}), on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 2)},
      .kernels = {pointwise_kernel<2>("mul", MulFn{}),
                  pointwise_kernel<1>("mul_scalar", MulScalarFn{-1.5})},
      // mul_channel_gate: x (N, C, H, W) · g (N, C, 1, 1), the multiply of a squeeze-and-excitation
      // gate (nn/models/blocks.h; RegNetY, EfficientNet, SENet): forward reads x and writes y,
      // backward reads gy and x and writes gx (g's reads and gradient are C/(H·W) of that).
      .benches =
          {bandwidth_bench("mul", 2, call),
           {"mul_channel_gate",
            {128, 256, 16, 16},
            Cost::bytes,
            [](const Shape& shape) {
              return Inputs{uniform(shape, {-1, 1}), uniform({shape[0], shape[1], 1, 1}, {0, 1})};
            },
            call,
            [](const Inputs& in, const Tensor& y) {
              return static_cast<double>(in[0].nbytes() + y.nbytes());
            },
            [](const Inputs& in, const Tensor& y) {
              return static_cast<double>(2 * in[0].nbytes() + y.nbytes());
            }}},
  }};
}

}  // namespace rg::testing
