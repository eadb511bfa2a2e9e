// nll_loss's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/nll_loss/nll_loss.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

namespace {

Tensor targets(std::vector<int64_t> v, const Shape& shape) {
  return from_vector(v, shape, {DType::i64});
}

// t (class indices, i64) and w (class weights) on the device, and in w's case the dtype, of x.
Tensor like(const Tensor& t, const Tensor& x) {
  return t.to(x.device()).to(is_floating(t.dtype()) ? x.dtype() : t.dtype());
}

}  // namespace

RG_OP_SPECS(nll_loss) {
  const Tensor t = targets({2, 0, -100, 3, 1}, {5});  // one ignored element
  const Tensor w = from_vector<double>({0.5, 1.5, 2.0, 0.7}, {4}, {DType::f64});
  const auto input = [](Shape shape) { return [=] { return Inputs{grad_input(shape)}; }; };
  std::vector<GradcheckCase> gradchecks;
  for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
    const std::string name(reduction_name(r));
    gradchecks.push_back(
        {name, [=](const Inputs& x) { return nll_loss(x[0], t, {}, r); }, input({5, 4})});
    gradchecks.push_back({name + " weighted",
                          [=](const Inputs& x) { return nll_loss(x[0], t, w, r); }, input({5, 4})});
  }
  // ignore_index inside [0, C); (N, C, d) input; unbatched (C) input.
  gradchecks.push_back(
      {"ignore_index 2",
       [=](const Inputs& x) {
         return nll_loss(x[0], targets({2, 0, 2, 3, 1}, {5}), w, Reduction::mean, 2);
       },
       input({5, 4})});
  gradchecks.push_back({"(N, C, d)",
                        [=](const Inputs& x) {
                          return nll_loss(x[0], targets({1, -100, 3, 0, 2, 2}, {2, 3}), w);
                        },
                        input({2, 4, 3})});
  gradchecks.push_back({"unbatched",
                        [=](const Inputs& x) { return nll_loss(x[0], targets({3}, {}), w); },
                        input({4})});

  // Inputs x, t (i64 targets) and, in the weighted cases, w: only x gets a gradient.
  const auto fixture = [](std::string name, Reduction r, int64_t ignore_index, bool weighted) {
    const Call call = [=](const Inputs& in) {
      return nll_loss(in[0], in[1], weighted ? in[2] : Tensor(), r, ignore_index);
    };
    std::vector<std::string> keys = {"x", "t"}, constants = {"t"};
    if (weighted) keys.push_back("w"), constants.push_back("w");
    return FixtureCase{"nll_loss", {std::move(name)}, keys, call, constants};
  };
  const Tensor classes = targets({0, 4, 2, -100, 1, 3, 4}, {7});
  const Tensor pixels = targets({0, 2, 1, 1, 2, 0, -100, 1, 2, 0, 0, 1}, {2, 2, 3});
  const Tensor class_weight = from_vector<double>({0.5, 1.0, 2.0, 1.5, 0.25}, {5});
  return {{
      .name = "nll_loss",
      .gradchecks = gradchecks,
      .fixtures = {fixture("mean", Reduction::mean, -100, false),
                   fixture("sum", Reduction::sum, -100, false),
                   fixture("none", Reduction::none, -100, false),
                   fixture("w_mean", Reduction::mean, -100, true),
                   fixture("ign_mean", Reduction::mean, -100, true),
                   fixture("ign_none", Reduction::none, -100, false),
                   fixture("ign1_sum", Reduction::sum, 1, true),
                   fixture("nd_mean", Reduction::mean, -100, true),
                   fixture("nd_none", Reduction::none, -100, false),
                   fixture("unbatched", Reduction::mean, -100, true)},
      .bad_inputs = {{[] {
                        nll_loss(zeros({3, 4}), zeros({3}));
                      },
                      {"nll_loss", "target must hold i64", "[3] f32 cpu"}},
                     {[] {
                        nll_loss(zeros({3, 4}), targets({0, 1}, {2}));
                      },
                      {"nll_loss", "[2] i64 cpu", "[3, 4] f32 cpu", "expected target shape [3]"}},
                     {[] {
                        nll_loss(zeros({2, 4, 5}), targets({0, 1}, {2}));
                      },
                      {"nll_loss", "expected target shape [2, 5]"}},
                     {[] {
                        nll_loss(zeros({3, 4}), targets({0, 4, 1}, {3}));
                      },
                      {"nll_loss", "target 4 is out of range", "C = 4"}},
                     {[] {
                        nll_loss(zeros({3, 4}), targets({0, -1, 1}, {3}));
                      },
                      {"nll_loss", "target -1 is out of range", "ignore_index -100"}},
                     {[] {
                        nll_loss(zeros({3, 4}), targets({0, 1, 2}, {3}), ones({3}));
                      },
                      {"nll_loss", "weight must have shape [4]", "[3] f32 cpu"}},
                     {[] {
                        nll_loss(zeros({3, 4}), targets({0, 1, 2}, {3}), ones({4}, {DType::f64}));
                      },
                      {"nll_loss", "dtype mismatch", "[4] f64 cpu"}},
                     {[] {
                        nll_loss(ones({3, 4}, {DType::i64}), targets({0, 1, 2}, {3}));
                      },
                      {"nll_loss", "[3, 4] i64 cpu"}},
                     {[] { nll_loss(scalar_tensor(1.0), targets({0}, {})); },
                      {"nll_loss", "(N, C, ...) or (C)"}}},
      .devices = {{"targets on the cpu",
                   [] {
                     nll_loss(on_gpu({2, 3}), zeros({2}, {DType::i64}));
                   }},
                  {"on cuda:0",
                   [] {
                     nll_loss(on_gpu({2, 3}), on_gpu({2}, DType::i64));
                   },
                   Stop::no_gpu}},
      .samples = {{"weighted",
                   {{7, 5}},
                   [=](const Inputs& x) {
                     return nll_loss(x[0], like(classes, x[0]), like(class_weight, x[0]));
                   },
                   kUnitValues},
                  {"pixels, none",
                   {{2, 3, 2, 3}},
                   [=](const Inputs& x) {
                     return nll_loss(x[0], like(pixels, x[0]), Tensor(), Reduction::none);
                   },
                   kUnitValues}},
  }};
}

}  // namespace rg::testing
