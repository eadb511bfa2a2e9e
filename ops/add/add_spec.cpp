// add's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/add/add.h"
#include "ops/add/add_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

RG_OP_SPECS(add) {
  const Call call = [](const Inputs& x) { return add(x[0], x[1]); };
  const auto inputs = [](Shape a, Shape b) {
    return [=] { return Inputs{grad_input(a), grad_input(b, -1, 1, 2)}; };
  };
  return {{
      .name = "add",
      .gradchecks = {{"same shape", call, inputs({2, 3}, {2, 3})},
                     {"both broadcast", call, inputs({2, 1, 3}, {4, 1})},
                     {"a broadcast", call, inputs({3}, {2, 3})},
                     {"scalar", [](const Inputs& x) { return x[0] + 2.5; },
                      [] {
                        return Inputs{grad_input({2, 2})};
                      }}},
      .fixtures = {{"add", {""}, {"a", "b"}, [](const Inputs& x) { return x[0] + x[1]; }}},
      .bad_inputs = {{[] {
                        add(ones({2, 3}), ones({4}));
                      },
                      {"add", "[2, 3]", "[4]", "broadcast"}},
                     {[] { add(ones({2}), ones({2}, {DType::f64})); },
                      {"add", "dtype mismatch", "[2] f32 cpu", "[2] f64 cpu"}},
                     {[] { add(ones({2}, {DType::i64}), 1.0); }, {"add", "[2] i64 cpu"}}},
      .devices = {{"on cuda:0",
                   [] {
                     add(on_gpu({2, 3}), on_gpu({2, 3}));
                   },
                   Stop::no_gpu},
                  {"mixed devices",
                   [] {
                     add(ones({2, 3}), on_gpu({2, 3}));
                   }},
                  {"scalar",
                   [] {
                     add(on_gpu({2, 3}), 1.0);
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 2),
                  pointwise_sample([](const Inputs& x) { return add(x[0], 0.5); }, 1)},
      .kernels = {pointwise_kernel<2>("add", AddFn{}),
                  pointwise_kernel<1>("add_scalar", AddScalarFn{0.75})},
      .benches = {bandwidth_bench("add", 2, call)},
  }};
}

}  // namespace rg::testing
