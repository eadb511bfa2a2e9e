// clone's and copy_'s spec (tests/support/op_spec.h): what the generic suites and bench_ops run
// on them. copy_'s PyTorch parity (in place, not differentiable) is in tests/ops/copy_test.cpp.
#include "ops/copy/copy.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

RG_OP_SPECS(copy) {
  const Call call = [](const Inputs& x) { return clone(x[0]); };
  return {{
      .name = "copy",
      .gradchecks = {{"clone", call,
                      [] {
                        return Inputs{grad_input({2, 3})};
                      }},
                     {"clone transposed",
                      [](const Inputs& x) { return clone(x[0].transpose(0, 1)); },
                      [] {
                        return Inputs{grad_input({2, 3})};
                      }}},
      .fixtures = {{"copy", {"clone"}, {"x"}, call, {}, 0, 0}},
      .bad_inputs = {{[] {
                        copy_(zeros({2, 3}), ones({4}));
                      },
                      {"copy_", "[2, 3]", "[4]", "broadcast"}},
                     {[] {
                        copy_(zeros({3}), ones({2, 3}));
                      },
                      {"copy_", "[2, 3] f32 cpu", "[3] f32 cpu", "cannot be broadcast"}},
                     {[] { copy_(zeros({1}).expand({3}), ones({3})); },
                      {"copy_", "[3] f32 cpu", "stride 0"}},
                     // Not differentiable: a source or destination that requires grad is refused
                     // in grad mode.
                     {[] { copy_(zeros({2}), ones({2}).set_requires_grad(true)); },
                      {"copy_", "source", "[2] f32 cpu", "not differentiable"}},
                     {[] { copy_(zeros({2}).set_requires_grad(true), ones({2})); },
                      {"copy_", "destination", "[2] f32 cpu", "requires grad"}},
                     {[] { copy_(Tensor(), ones({2})); }, {"copy_", "undefined"}},
                     {[] { clone(Tensor()); }, {"clone", "undefined"}}},
      .devices = {{"clone",
                   [] {
                     clone(on_gpu({2, 3}));
                   },
                   Stop::no_gpu}},
      .samples = {{"clone transposed",
                   {{3, 37, 5}},
                   [](const Inputs& x) { return clone(x[0].transpose(0, 2)); }}},
  }};
}

}  // namespace rg::testing
