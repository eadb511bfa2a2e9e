// avg_pool2d's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/avg_pool2d/avg_pool2d.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

namespace {

Call pooled(Pool2dSize k, Pool2dSize s, Pool2dSize p, CeilMode ceil, CountIncludePad count) {
  return [=](const Inputs& x) { return avg_pool2d(x[0], k, s, p, ceil, count); };
}

}  // namespace

RG_OP_SPECS(avg_pool2d) {
  using C = CeilMode;
  using I = CountIncludePad;
  std::vector<GradcheckCase> gradchecks;
  for (I count : {I::on, I::off}) {
    const std::string pad = count == I::on ? "count_include_pad" : "exclude pad";
    const auto input = [](Shape shape) { return [=] { return Inputs{grad_input(shape)}; }; };
    gradchecks.push_back({"k2, " + pad, pooled(2, {}, 0, C::off, count), input({1, 2, 4, 4})});
    gradchecks.push_back({"k3s2p1, " + pad, pooled(3, 2, 1, C::off, count), input({2, 1, 5, 5})});
    gradchecks.push_back(
        {"k2x3s1x2p1, " + pad, pooled({2, 3}, {1, 2}, {1, 1}, C::off, count), input({1, 1, 5, 6})});
    // The last window clipped.
    gradchecks.push_back(
        {"k3s2p1 ceil, " + pad, pooled(3, 2, 1, C::on, count), input({1, 1, 6, 6})});
  }
  const auto fixture = [](std::string name, Call call) {
    return FixtureCase{"avg_pool2d", {std::move(name)}, {"x"}, std::move(call)};
  };
  return {{
      .name = "avg_pool2d",
      .gradchecks = gradchecks,
      .fixtures = {fixture("k2", pooled(2, {}, 0, C::off, I::on)),
                   fixture("k3s2p1", pooled(3, 2, 1, C::off, I::on)),
                   fixture("k3s2p1_exclude", pooled(3, 2, 1, C::off, I::off)),
                   fixture("k3s2p1ceil", pooled(3, 2, 1, C::on, I::on)),
                   fixture("k3s2p1ceil_exclude", pooled(3, 2, 1, C::on, I::off)),
                   fixture("k2x3s1x2p1", pooled({2, 3}, {1, 2}, {1, 1}, C::off, I::on))},
      .bad_inputs = {{[] {
                        avg_pool2d(ones({4, 4}), 2);
                      },
                      {"avg_pool2d", "4-D", "[4, 4]"}},
                     {[] {
                        avg_pool2d(ones({1, 1, 4, 4}, {DType::i64}), 2);
                      },
                      {"avg_pool2d", "[1, 1, 4, 4] i64 cpu"}},
                     {[] {
                        avg_pool2d(ones({1, 1, 2, 2}), 5, 1, 1);
                      },
                      {"avg_pool2d", "too small", "[1, 1, 2, 2] f32 cpu"}},
                     {[] {
                        avg_pool2d(ones({1, 1, 8, 8}), 2, 1, 2);
                      },
                      {"avg_pool2d", "padding (2, 2)", "half of kernel_size (2, 2)"}},
                     {[] {
                        avg_pool2d(ones({1, 1, 8, 8}), 2, 1, -1);
                      },
                      {"avg_pool2d", "padding must be non-negative"}}},
      .devices = {{"avg_pool2d",
                   [] {
                     avg_pool2d(on_gpu({2, 3, 4, 4}), 2);
                   },
                   Stop::no_gpu}},
      .samples = {{"", {{2, 3, 9, 7}}, pooled(3, 2, 1, C::off, I::on)},
                  {"transposed, ceil, exclude pad",
                   {{2, 3, 9, 7}},
                   [](const Inputs& x) {
                     return avg_pool2d(x[0].transpose(2, 3), 3, 2, 1, C::on, I::off);
                   }}},
  }};
}

}  // namespace rg::testing
