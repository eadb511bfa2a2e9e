// neg's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/neg/neg.h"
#include "ops/neg/neg_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

RG_OP_SPECS(neg) {
  const Call call = [](const Inputs& x) { return neg(x[0]); };
  // The operator and a transposed (non-contiguous) input.
  const Call transposed = [](const Inputs& x) { return -x[0].transpose(0, 1); };
  return {{
      .name = "neg",
      .gradchecks = {{"contiguous", call,
                      [] {
                        return Inputs{grad_input({2, 3})};
                      }},
                     {"transposed", transposed,
                      [] {
                        return Inputs{grad_input({2, 3})};
                      }}},
      .fixtures =
          {{"neg", {""}, {"x"}, [](const Inputs& x) { return -x[0]; }},
           {"neg", {"t"}, {"x"}, [](const Inputs& x) { return neg(x[0].transpose(0, 1)); }}},
      .bad_inputs = {{[] { neg(ones({2}, {DType::i64})); }, {"neg", "[2] i64 cpu"}},
                     {[] {
                        -ones({3, 1}, {DType::u8});
                      },
                      {"neg", "[3, 1] u8 cpu"}}},
      .devices = {{"neg",
                   [] {
                     neg(on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 1)},
      .kernels = {pointwise_kernel<1>("neg", NegFn{})},
      .benches = {bandwidth_bench("neg", 1, call)},
  }};
}

}  // namespace rg::testing
