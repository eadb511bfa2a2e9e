// cast's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it. Its
// PyTorch parity (bit-exact conversions, forward and backward per dtype) is in
// tests/ops/cast_test.cpp.
#include "ops/cast/cast.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

RG_OP_SPECS(cast) {
  return {{
      .name = "cast",
      // cast is linear, so a large step is exact and keeps f32 rounding out of the difference.
      .gradchecks = {{"through f32",
                      [](const Inputs& x) { return cast(cast(x[0], DType::f32), DType::f64); },
                      [] {
                        return Inputs{grad_input({2, 3})};
                      },
                      1e-2}},
      .bad_inputs = {{[] { cast(Tensor(), DType::f32); }, {"cast", "undefined", "f32"}}},
      .devices = {{"cast",
                   [] {
                     cast(on_gpu({2, 3}), DType::f64);
                   },
                   Stop::no_gpu}},
      // There and back, each gradient cast back.
      .samples = {{"",
                   {{3, 37, 5}},
                   [](const Inputs& x) {
                     return cast(cast(x[0], x[0].dtype() == DType::f64 ? DType::f32 : DType::f64),
                                 x[0].dtype());
                   }}},
  }};
}

}  // namespace rg::testing
