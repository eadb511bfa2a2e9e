// pad's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/pad/pad.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

namespace {

Call padded(std::vector<int64_t> amounts, double value) {
  return [=](const Inputs& x) { return pad(x[0], amounts, value); };
}

}  // namespace

RG_OP_SPECS(pad) {
  const auto input = [](Shape shape) { return [=] { return Inputs{grad_input(shape)}; }; };
  return {{
      .name = "pad",
      .gradchecks = {{"2-D pad", padded({1, 2, 2, 0}, 0.5), input({2, 2, 3, 2})},
                     {"3-D pad", padded({1, 0, 0, 1, 1, 1}, 0), input({1, 2, 2, 3, 2})},
                     {"crop and pad", padded({-1, 1, 1, -2}, 0), input({2, 4, 3})},
                     {"crop only", padded({-1, -1}, 0), input({2, 4})}},
      // Exact: copies and fills.
      .fixtures = {{"pad", {"last2"}, {"x"}, padded({1, 2, 0, 3}, 0.0), {}, 0, 0},
                   {"pad", {"last3"}, {"x"}, padded({1, 0, 2, 1, 1, 1}, 0.5), {}, 0, 0},
                   {"pad", {"crop"}, {"x"}, padded({-1, 2, 1, -2}, -1.5), {}, 0, 0},
                   {"pad", {"one_dim"}, {"x"}, padded({2, -1}, 0.0), {}, 0, 0},
                   {"pad", {"all_dims"}, {"x"}, padded({1, 1, -1, 0, 1, 0}, 2.0), {}, 0, 0}},
      .bad_inputs = {{[] {
                        pad(ones({2, 3}), {1, 2, 3});
                      },
                      {"pad", "(left, right) pairs", "{1, 2, 3}"}},
                     {[] {
                        pad(ones({3}), {1, 1, 1, 1});
                      },
                      {"pad", "{1, 1, 1, 1}", "2 pairs", "[3] f32 cpu", "1 dimensions"}},
                     {[] {
                        pad(ones({2, 3}), {-2, -1});
                      },
                      {"pad", "{-2, -1}", "dimension 1", "[2, 3] f32 cpu", "size 0"}},
                     {[] {
                        pad(ones({2, 3}, {DType::i64}).set_requires_grad(true), {1, 1});
                      },
                      {"i64"}}},
      .devices = {{"pad",
                   [] {
                     pad(on_gpu({2, 3, 4, 4}), {1, 1});
                   },
                   Stop::no_gpu}},
      .samples = {{"transposed",
                   {{2, 3, 5, 7}},
                   [](const Inputs& x) {
                     return pad(x[0].transpose(2, 3), {1, 2, -1, 1}, 0.5);
                   }}},
  }};
}

}  // namespace rg::testing
