// binary_cross_entropy_with_logits's spec (tests/support/op_spec.h): what the generic suites and
// bench_ops run on it.
#include "ops/binary_cross_entropy_with_logits/bce_functors.h"
#include "ops/binary_cross_entropy_with_logits/binary_cross_entropy_with_logits.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

namespace {

constexpr const char* kOp = "binary_cross_entropy_with_logits";

// The loss on (x, t[, w][, pw]): the weights, where given, are the inputs after x and t.
enum class Weights { none, weight, pos_weight, both };
Call loss(Weights weights, Reduction r) {
  return [=](const Inputs& in) {
    const bool w = weights == Weights::weight || weights == Weights::both;
    const bool pw = weights == Weights::pos_weight || weights == Weights::both;
    return binary_cross_entropy_with_logits(in[0], in[1], w ? in[2] : Tensor(),
                                            pw ? in[w ? 3 : 2] : Tensor(), r);
  };
}

}  // namespace

RG_OP_SPECS(binary_cross_entropy_with_logits) {
  // Input and target both checked (the target is differentiable); weights are constants.
  const Tensor w = from_vector<double>({0.5, 1.5, 2.0}, {3, 1}, {DType::f64});
  const Tensor pw = from_vector<double>({0.3, 2.5}, {2}, {DType::f64});
  std::vector<GradcheckCase> gradchecks;
  for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum})
    for (int weights = 0; weights < 4; ++weights) {
      const Tensor wt = weights & 1 ? w : Tensor(), pwt = weights & 2 ? pw : Tensor();
      gradchecks.push_back(
          {std::string(reduction_name(r)) + " weights " + std::to_string(weights),
           [=](const Inputs& in) {
             return binary_cross_entropy_with_logits(in[0], in[1], wt, pwt, r);
           },
           [] {
             return Inputs{grad_input({2, 3, 2}, -3, 3), grad_input({2, 3, 2}, 0, 1, 2)};
           }});
    }
  const auto fixture = [](std::string name, Weights weights, Reduction r) {
    std::vector<std::string> keys = {"x", "t"}, constants;
    if (weights == Weights::weight || weights == Weights::both) keys.push_back("w");
    if (weights == Weights::pos_weight || weights == Weights::both) keys.push_back("pw");
    for (std::size_t k = 2; k < keys.size(); ++k) constants.push_back(keys[k]);
    return FixtureCase{kOp, {std::move(name)}, keys, loss(weights, r), constants};
  };
  return {{
      .name = kOp,
      .gradchecks = gradchecks,
      .fixtures = {fixture("mean", Weights::none, Reduction::mean),
                   fixture("sum", Weights::none, Reduction::sum),
                   fixture("none", Weights::none, Reduction::none),
                   fixture("w_mean", Weights::weight, Reduction::mean),
                   fixture("pw_mean", Weights::pos_weight, Reduction::mean),
                   fixture("wpw_sum", Weights::both, Reduction::sum),
                   fixture("wpw_none", Weights::both, Reduction::none),
                   fixture("big", Weights::pos_weight, Reduction::mean)},
      .bad_inputs =
          {{[] {
              binary_cross_entropy_with_logits(zeros({2, 3}), zeros({3}));
            },
            {kOp, "[3] f32 cpu", "[2, 3] f32 cpu"}},
           {[] {
              binary_cross_entropy_with_logits(zeros({2, 3}), zeros({2, 3}, {DType::i64}));
            },
            {kOp, "[2, 3] i64 cpu"}},
           {[] {
              binary_cross_entropy_with_logits(zeros({2, 3}), zeros({2, 3}, {DType::f64}));
            },
            {kOp, "dtype mismatch"}},
           {[] {
              binary_cross_entropy_with_logits(zeros({2, 3}), zeros({2, 3}), ones({2}));
            },
            {kOp, "weight", "[2] f32 cpu"}},
           {[] {
              binary_cross_entropy_with_logits(zeros({2, 3}), zeros({2, 3}), {}, ones({4, 2, 3}));
            },
            {kOp, "pos_weight [4, 2, 3] f32 cpu cannot be broadcast"}}},
      .devices = {{"on cuda:0",
                   [] {
                     binary_cross_entropy_with_logits(on_gpu({2, 3}), on_gpu({2, 3}));
                   },
                   Stop::no_gpu},
                  {"mixed devices",
                   [] {
                     binary_cross_entropy_with_logits(on_gpu({2, 3}), ones({2, 3}));
                   }}},
      .samples = {{"weighted, summed",
                   {{3, 37, 5}, {3, 37, 5}, {37, 5}},
                   [](const Inputs& x) {
                     return binary_cross_entropy_with_logits(x[0], x[1], x[2], Tensor(),
                                                             Reduction::sum);
                   },
                   kUnitValues}},
      .kernels =
          {pointwise_kernel<4>("bce", BceWithLogitsFn{}, kPositiveValues),
           pointwise_kernel<3>("bce_unit_pos_weight", UnitPosWeight<BceWithLogitsFn>{{}},
                               kPositiveValues),
           pointwise_kernel<3>("bce_unit_weight", UnitWeight<BceWithLogitsFn>{{}}, kPositiveValues),
           pointwise_kernel<2>("bce_unit_weights", UnitWeights<BceWithLogitsFn>{{}}),
           pointwise_kernel<5>("bce_grad_input", BceWithLogitsGradInputFn{0.5}, kPositiveValues),
           pointwise_kernel<5>("bce_grad_target", BceWithLogitsGradTargetFn{0.5}, kPositiveValues),
           pointwise_kernel<3>("bce_grad_input_unit_weights",
                               UnitWeights<BceWithLogitsGradInputFn>{{0.5}})},
  }};
}

}  // namespace rg::testing
