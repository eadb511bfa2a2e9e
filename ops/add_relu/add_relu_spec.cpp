// add_relu's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/add/add.h"
#include "ops/add_relu/add_relu.h"
#include "ops/add_relu/add_relu_functors.h"
#include "ops/relu/relu.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

namespace {

// Operands whose sums stay away from the kink at 0, where the derivative is undefined.
Tensor away_from_kink(const Shape& shape, uint64_t sign_seed) {
  Tensor t = grad_input(shape, 0.2, 1.0, sign_seed);
  std::vector<double> v = t.to_vector<double>();
  for (std::size_t i = 0; i < v.size(); ++i)
    if ((i + sign_seed) % 3 == 0) v[i] = -v[i] - 1.5;
  return from_vector(v, shape, {DType::f64}).set_requires_grad(true);
}

}  // namespace

RG_OP_SPECS(add_relu) {
  const Call call = [](const Inputs& x) { return add_relu(x[0], x[1]); };
  return {{
      .name = "add_relu",
      .gradchecks =
          {{"same shape", call,
            [] {
              return Inputs{away_from_kink({2, 3}, 1), grad_input({2, 3}, -0.1, 0.1, 2)};
            }},
           {"b broadcast", call,
            [] {
              return Inputs{away_from_kink({2, 4, 3}, 2), grad_input({4, 1}, -0.1, 0.1, 3)};
            }},
           {"a broadcast", call,
            [] {
              return Inputs{grad_input({3}, -0.1, 0.1, 4), away_from_kink({2, 3}, 5)};
            }}},
      .fixtures = {{"add_relu", {"same", "broadcast"}, {"a", "b"}, call}},
      .bad_inputs = {{[] {
                        add_relu(ones({2, 3}), ones({4}));
                      },
                      {"add_relu", "[2, 3]", "[4]", "broadcast"}},
                     {[] { add_relu(ones({2}), ones({2}, {DType::f64})); },
                      {"add_relu", "dtype mismatch", "[2] f32 cpu", "[2] f64 cpu"}},
                     {[] { add_relu(ones({2}, {DType::i64}), ones({2}, {DType::i64})); },
                      {"add_relu", "[2] i64 cpu"}}},
      .devices = {{"add_relu",
                   [] {
                     add_relu(on_gpu({2, 3}), on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 2)},
      .kernels = {pointwise_kernel<2>("add_relu", AddReluFn{})},
      .benches = {bandwidth_bench("add_relu", 2, call),
                  bandwidth_bench("add_relu_unfused", 2,
                                  [](const Inputs& x) { return relu(add(x[0], x[1])); })},
  }};
}

}  // namespace rg::testing
