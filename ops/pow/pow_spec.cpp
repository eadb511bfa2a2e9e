// pow's spec (tests/support/op_spec.h): what the generic suites and bench_ops run on it.
#include "ops/pow/pow.h"
#include "ops/pow/pow_functors.h"
#include "tests/support/op_spec_kernels.h"

namespace rg::testing {

namespace {

std::string number(double v) {
  std::string s = std::to_string(v);
  return s.substr(0, s.find_last_not_of('0') + 1);
}

}  // namespace

RG_OP_SPECS(pow) {
  const Call call = [](const Inputs& x) { return pow(x[0], x[1]); };
  std::vector<GradcheckCase> gradchecks;
  // Integer exponents take bases of any sign; the others positive bases (x^2.7 of a negative
  // base is nan).
  const auto bases = [](double low, double high) {
    return [=] { return Inputs{grad_input({2, 3}, low, high)}; };
  };
  for (double e : {2.0, 3.0, 1.0, -2.0, 0.0}) {
    const Call scalar = [e](const Inputs& x) { return pow(x[0], e); };
    gradchecks.push_back({"x^" + number(e) + ", x > 0", scalar, bases(0.3, 1.5)});
    gradchecks.push_back({"x^" + number(e) + ", x < 0", scalar, bases(-1.5, -0.3)});
  }
  for (double e : {0.5, -1.0, 2.7, -1.5, 0.3})
    gradchecks.push_back(
        {"x^" + number(e), [e](const Inputs& x) { return pow(x[0], e); }, bases(0.3, 2)});
  // A tensor exponent, positive bases (the exponent's gradient is y·ln x).
  const auto both = [](Shape x, Shape e, double low, double high) {
    return [=] { return Inputs{grad_input(x, 0.3, 2), grad_input(e, low, high, 2)}; };
  };
  gradchecks.push_back({"tensor exponent", call, both({2, 3}, {2, 3}, -1.5, 1.5)});
  gradchecks.push_back({"exponent broadcast", call, both({2, 3, 2}, {3, 1}, -1, 1)});
  gradchecks.push_back({"base broadcast", call, both({3}, {2, 3}, -1, 1)});
  gradchecks.push_back({"both broadcast", call, both({2, 1, 3}, {4, 1}, -1, 1)});
  for (double base : {2.0, 0.5, 3.7})
    gradchecks.push_back({number(base) + "^x", [base](const Inputs& x) { return pow(base, x[0]); },
                          [] {
                            return Inputs{grad_input({2, 3}, -2, 2)};
                          }});

  std::vector<FixtureCase> fixtures;
  const std::vector<std::pair<std::string, double>> scalar_cases = {
      {"e2", 2}, {"e3", 3},     {"e0_5", 0.5},   {"em1", -1},
      {"e1", 1}, {"e2_7", 2.7}, {"em1_5", -1.5}, {"e0", 0}};
  // Init-captures: clang before 16 cannot capture a structured binding (scripts/asan.sh's tree).
  for (const auto& [c, e] : scalar_cases)
    fixtures.push_back({"pow", {c}, {"x"}, [e = e](const Inputs& x) { return pow(x[0], e); }});
  fixtures.push_back({"pow", {"tt", "tt_both", "zero_base"}, {"x", "e"}, call});
  for (const auto& [c, base] :
       std::vector<std::pair<std::string, double>>{{"rs", 2.0}, {"rs0", 0.0}})
    fixtures.push_back(
        {"pow", {c}, {"e"}, [base = base](const Inputs& x) { return pow(base, x[0]); }});

  return {{
      .name = "pow",
      .gradchecks = gradchecks,
      .fixtures = fixtures,
      .bad_inputs = {{[] {
                        pow(ones({2, 3}), ones({2}));
                      },
                      {"pow", "[2, 3]", "[2]", "broadcast"}},
                     {[] { pow(ones({2}), ones({2}, {DType::f64})); },
                      {"pow", "dtype mismatch", "[2] f32 cpu", "[2] f64 cpu"}},
                     {[] { pow(ones({2}, {DType::i64}), 2.0); }, {"pow", "[2] i64 cpu"}},
                     {[] { pow(2.0, ones({2}, {DType::i64})); }, {"pow", "[2] i64 cpu"}}},
      .devices = {{"pow",
                   [] {
                     pow(on_gpu({2, 3}), 2.0);
                   },
                   Stop::no_gpu}},
      .samples = {pointwise_sample(call, 2, kPositiveValues)},
      .kernels = {pointwise_kernel<1>("pow_scalar", PowScalarFn{2.5}, kPositiveValues),
                  pointwise_kernel<2>("pow_scalar_grad", PowScalarGradFn{2.5}, kPositiveValues),
                  pointwise_kernel<2>("pow", PowFn{}, kPositiveValues),
                  pointwise_kernel<3>("pow_grad_base", PowGradBaseFn{}, kPositiveValues),
                  pointwise_kernel<3>("pow_grad_exponent", PowGradExponentFn{}, kPositiveValues),
                  pointwise_kernel<1>("rpow_scalar", RpowScalarFn{1.5}),
                  pointwise_kernel<2>("rpow_grad", RpowGradFn{1.5}, kPositiveValues)},
      .benches = {bandwidth_bench("pow", 2, call, kPositiveValues)},
  }};
}

}  // namespace rg::testing
