// cross_entropy's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/cross_entropy/cross_entropy.h"
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

RG_OP_SPECS(cross_entropy) {
  const Tensor t = targets({2, 0, -100, 3, 1}, {5});  // one ignored element
  const Tensor w = from_vector<double>({0.5, 1.5, 2.0, 0.7}, {4}, {DType::f64});
  const auto input = [](Shape shape, double low = -1, double high = 1) {
    return [=] { return Inputs{grad_input(shape, low, high)}; };
  };
  std::vector<GradcheckCase> gradchecks;
  for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum})
    for (double ls : {0.0, 0.25})
      for (bool weighted : {false, true})
        gradchecks.push_back(
            {std::string(reduction_name(r)) + " ls " + std::to_string(ls) + (weighted ? " w" : ""),
             [=](const Inputs& x) {
               return cross_entropy(x[0], t, weighted ? w : Tensor(), r, -100, ls);
             },
             input({5, 4}, -2, 2)});
  // ignore_index inside [0, C); (N, C, d) input; unbatched (C) input; non-contiguous logits.
  gradchecks.push_back(
      {"ignore_index 2",
       [=](const Inputs& x) {
         return cross_entropy(x[0], targets({2, 0, 2, 3, 1}, {5}), w, Reduction::mean, 2, 0.1);
       },
       input({5, 4})});
  gradchecks.push_back({"(N, C, d)",
                        [=](const Inputs& x) {
                          return cross_entropy(x[0], targets({1, -100, 3, 0, 2, 2}, {2, 3}), w,
                                               Reduction::mean, -100, 0.2);
                        },
                        input({2, 4, 3})});
  gradchecks.push_back({"unbatched",
                        [=](const Inputs& x) {
                          return cross_entropy(x[0], targets({3}, {}), w, Reduction::mean, -100,
                                               0.3);
                        },
                        input({4})});
  gradchecks.push_back({"transposed",
                        [](const Inputs& x) {
                          return cross_entropy(x[0].transpose(0, 1), targets({1, 0, 2}, {3}));
                        },
                        input({4, 3})});

  // Inputs x, t (i64 targets) and, in the weighted cases, w: only x gets a gradient.
  const auto fixture = [](std::string name, Reduction r, double smoothing, bool weighted) {
    const Call call = [=](const Inputs& in) {
      return cross_entropy(in[0], in[1], weighted ? in[2] : Tensor(), r, -100, smoothing);
    };
    std::vector<std::string> keys = {"x", "t"}, constants = {"t"};
    if (weighted) keys.push_back("w"), constants.push_back("w");
    return FixtureCase{"cross_entropy", {std::move(name)}, keys, call, constants};
  };
  const Tensor classes = targets({0, 4, 2, -100, 1, 3, 4}, {7});
  const Tensor pixels = targets({0, 2, 1, 1, 2, 0, -100, 1, 2, 0, 0, 1}, {2, 2, 3});
  const Tensor class_weight = from_vector<double>({0.5, 1.0, 2.0, 1.5, 0.25}, {5});
  return {{
      .name = "cross_entropy",
      .gradchecks = gradchecks,
      .fixtures = {fixture("mean", Reduction::mean, 0.0, false),
                   fixture("sum", Reduction::sum, 0.0, false),
                   fixture("none", Reduction::none, 0.0, false),
                   fixture("w_mean", Reduction::mean, 0.0, true),
                   fixture("ign_mean", Reduction::mean, 0.0, false),
                   fixture("ls_mean", Reduction::mean, 0.1, false),
                   fixture("ls_ign_mean", Reduction::mean, 0.2, false),
                   fixture("lsw_mean", Reduction::mean, 0.2, true),
                   fixture("lsw_sum", Reduction::sum, 0.3, true),
                   fixture("lsw_none", Reduction::none, 0.15, true),
                   fixture("nd_lsw_mean", Reduction::mean, 0.1, true),
                   fixture("nd_none", Reduction::none, 0.0, false),
                   fixture("unbatched", Reduction::mean, 0.1, true),
                   fixture("big", Reduction::mean, 0.1, false)},
      .bad_inputs =
          {{[] {
              cross_entropy(zeros({3, 4}), zeros({3, 4}));
            },
            {"cross_entropy", "target must hold i64", "[3, 4] f32 cpu"}},
           {[] {
              cross_entropy(zeros({3, 4}), targets({0, 1}, {2}));
            },
            {"cross_entropy", "[2] i64 cpu", "[3, 4] f32 cpu", "expected target shape [3]"}},
           {[] {
              cross_entropy(zeros({3, 4}), targets({0, 7, 1}, {3}));
            },
            {"cross_entropy", "target 7 is out of range", "C = 4"}},
           {[] {
              cross_entropy(zeros({3, 4}), targets({0, 1, 2}, {3}), ones({5}));
            },
            {"cross_entropy", "weight must have shape [4]", "[5] f32 cpu"}},
           {[] {
              cross_entropy(zeros({3, 4}), targets({0, 1, 2}, {3}), {}, Reduction::mean, -100, 1.5);
            },
            {"cross_entropy", "label_smoothing", "1.5"}},
           {[] {
              cross_entropy(ones({3, 4}, {DType::i64}), targets({0, 1, 2}, {3}));
            },
            {"cross_entropy", "[3, 4] i64 cpu"}},
           {[] {
              cross_entropy(zeros({3, 4}), targets({0, 1, 2}, {3}), ones({4}, {DType::f64}));
            },
            {"cross_entropy", "dtype mismatch"}}},
      .devices = {{"on cuda:0",
                   [] {
                     cross_entropy(on_gpu({2, 3}), on_gpu({2}, DType::i64));
                   },
                   Stop::no_gpu},
                  {"targets on the cpu",
                   [] {
                     cross_entropy(on_gpu({2, 3}), zeros({2}, {DType::i64}));
                   }},
                  {"logits on the cpu",
                   [] {
                     cross_entropy(ones({2, 3}), on_gpu({2}, DType::i64));
                   }}},
      .samples = {{"",
                   {{7, 5}},
                   [=](const Inputs& x) { return cross_entropy(x[0], like(classes, x[0])); },
                   kUnitValues},
                  {"weighted, smoothed, none",
                   {{7, 5}},
                   [=](const Inputs& x) {
                     return cross_entropy(x[0], like(classes, x[0]), like(class_weight, x[0]),
                                          Reduction::none, -100, 0.1);
                   },
                   kUnitValues},
                  {"pixels",
                   {{2, 3, 2, 3}},
                   [=](const Inputs& x) {
                     return cross_entropy(x[0], like(pixels, x[0]), Tensor(), Reduction::sum);
                   },
                   kUnitValues},
                  {"wide rows",
                   {{3, 300}},
                   [=](const Inputs& x) {
                     return cross_entropy(x[0], like(classes.narrow(0, 0, 3), x[0]));
                   },
                   kUnitValues}},
  }};
}

}  // namespace rg::testing
