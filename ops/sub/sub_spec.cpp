// sub's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/sub/sub.h"
#include "ops/sub/sub_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

RG_OP_SPECS(sub) {
  const Call call = [](const Inputs& x) { return sub(x[0], x[1]); };
  const auto inputs = [](Shape a, Shape b) {
    return [=] { return Inputs{grad_input(a), grad_input(b, -1, 1, 2)}; };
  };
  const auto one_input = [](Shape a) { return [=] { return Inputs{grad_input(a)}; }; };
  return {{
      .name = "sub",
      .gradchecks =
          {{"same shape", call, inputs({2, 3}, {2, 3})},
           {"b broadcast", call, inputs({2, 3, 2}, {3, 1})},
           {"a broadcast", call, inputs({3}, {2, 3})},
           {"both broadcast", call, inputs({2, 1, 3}, {4, 1})},
           {"minus a scalar", [](const Inputs& x) { return x[0] - 2.5; }, one_input({2, 3})},
           {"from a scalar", [](const Inputs& x) { return 2.5 - x[0]; }, one_input({2, 3})},
           {"sub(s, x)", [](const Inputs& x) { return sub(-1.0, x[0]); }, one_input({4})}},
      .fixtures = {{"sub",
                    {"same", "bcast_b", "bcast_both"},
                    {"a", "b"},
                    [](const Inputs& x) { return x[0] - x[1]; }},
                   {"sub", {"scalar"}, {"a"}, [](const Inputs& x) { return x[0] - 1.5; }},
                   {"sub", {"rscalar"}, {"a"}, [](const Inputs& x) { return 2.5 - x[0]; }}},
      .bad_inputs = {{[] {
                        sub(ones({2, 3}), ones({4}));
                      },
                      {"sub", "[2, 3]", "[4]", "broadcast"}},
                     {[] { sub(ones({2}), ones({2}, {DType::f64})); },
                      {"sub", "dtype mismatch", "[2] f32 cpu", "[2] f64 cpu"}},
                     {[] { sub(ones({2}, {DType::i64}), 1.0); }, {"sub", "[2] i64 cpu"}},
                     {[] { sub(1.0, ones({2}, {DType::u8})); }, {"sub", "[2] u8 cpu"}}},
      .devices = {{"mixed devices",
                   [] {
                     sub(on_gpu({2, 3}), ones({2, 3}));
                   }},
                  {"on cuda:0",
                   [] {
                     sub(on_gpu({2, 3}), on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 2)},
      .kernels = {pointwise_kernel<2>("sub", SubFn{}),
                  pointwise_kernel<1>("sub_scalar", SubScalarFn{0.75}),
                  pointwise_kernel<1>("rsub_scalar", RsubScalarFn{0.75})},
      .benches = {bandwidth_bench("sub", 2, call)},
  }};
}

}  // namespace rg::testing
