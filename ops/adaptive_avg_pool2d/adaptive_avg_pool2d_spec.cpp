// adaptive_avg_pool2d's spec (tests/support/op_spec.h): what the generic suites and bench_ops run
// on it.
#include "ops/adaptive_avg_pool2d/adaptive_avg_pool2d.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

namespace {

Call pooled(Pool2dSize out) {
  return [=](const Inputs& x) { return adaptive_avg_pool2d(x[0], out); };
}

}  // namespace

RG_OP_SPECS(adaptive_avg_pool2d) {
  constexpr const char* kOp = "adaptive_avg_pool2d";
  const auto input = [](Shape shape) { return [=] { return Inputs{grad_input(shape)}; }; };
  return {{
      .name = kOp,
      .gradchecks = {{"divisible", pooled(2), input({1, 2, 4, 4})},
                     {"overlapping bins", pooled({3, 2}), input({2, 1, 5, 7})},
                     {"global", pooled(1), input({1, 2, 3, 3})},
                     {"more bins than rows", pooled({3, 4}), input({1, 1, 2, 3})}},
      .fixtures = {{kOp, {"7x5to3x2"}, {"x"}, pooled({3, 2})},
                   {kOp, {"global"}, {"x"}, pooled(1)},
                   {kOp, {"8x8to4x4"}, {"x"}, pooled(4)},
                   {kOp, {"3x3to5x4"}, {"x"}, pooled({5, 4})}},
      .bad_inputs = {{[] {
                        adaptive_avg_pool2d(ones({2, 4, 4}), 1);
                      },
                      {kOp, "4-D", "[2, 4, 4] f32 cpu"}},
                     {[] {
                        adaptive_avg_pool2d(ones({1, 1, 4, 4}, {DType::u8}), 1);
                      },
                      {kOp, "[1, 1, 4, 4] u8 cpu"}},
                     {[] {
                        adaptive_avg_pool2d(ones({1, 1, 4, 4}), {0, 2});
                      },
                      {kOp, "output_size", "(0, 2)"}},
                     {[] {
                        adaptive_avg_pool2d(ones({1, 1, 0, 4}), 1);
                      },
                      {kOp, "non-empty", "[1, 1, 0, 4]"}}},
      .devices = {{kOp,
                   [] {
                     adaptive_avg_pool2d(on_gpu({2, 3, 4, 4}), {1, 1});
                   },
                   Stop::no_gpu}},
      .samples = {{"", {{2, 3, 9, 7}}, pooled({4, 3})}},
  }};
}

}  // namespace rg::testing
