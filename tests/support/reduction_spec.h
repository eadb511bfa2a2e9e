#pragma once
// The spec parts that sum and mean share (ops/sum/sum_spec.cpp, ops/mean/mean_spec.cpp): the same
// reductions over dims, gradchecked on the same shapes, and their fixtures' cases (mean's fixture
// module reuses sum's, make_cases).

#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "ops/reduction/reduction.h"
#include "tests/support/op_spec.h"

namespace rg::testing {

using ReduceAll = std::function<Tensor(const Tensor&)>;
using ReduceOver = std::function<Tensor(const Tensor&, const std::vector<int64_t>&, KeepDim)>;

// Adds to `spec` the gradchecks and fixture cases of a reduction: `all` over every dim, `over`
// the dims given, on inputs of 2 to 4 dims, kept dims, negative dims and a transposed input.
inline void add_reduction_parts(OpSpec& spec, const ReduceAll& all, const ReduceOver& over) {
  const auto input = [](Shape shape) { return [=] { return Inputs{grad_input(shape)}; }; };
  const auto along = [over](std::vector<int64_t> dims, KeepDim keep) -> Call {
    return [=](const Inputs& x) { return over(x[0], dims, keep); };
  };
  const Call every = [all](const Inputs& x) { return all(x[0]); };
  const Call transposed = [over](const Inputs& x) {
    return over(x[0].transpose(0, 1), {1}, KeepDim::no);
  };
  const std::vector<std::tuple<std::string, std::vector<int64_t>, KeepDim, Shape>> gradchecks = {
      {"dim 1", {1}, KeepDim::no, {2, 3, 2}},
      {"dim 1 kept", {1}, KeepDim::yes, {2, 3, 2}},
      {"dims 0, 2 kept", {0, 2}, KeepDim::yes, {2, 3, 2}},
      {"dim -1", {-1}, KeepDim::no, {2, 3, 2}},
      {"dims 1, -1", {1, -1}, KeepDim::no, {2, 2, 3, 2}},
      {"dims 0, 2, 3 kept", {0, 2, 3}, KeepDim::yes, {2, 2, 3, 2}},
      {"dim 0", {0}, KeepDim::no, {3, 2}}};
  spec.gradchecks.push_back({"all", every, input({2, 3, 2})});
  for (const auto& [label, dims, keep, shape] : gradchecks)
    spec.gradchecks.push_back({label, along(dims, keep), input(shape)});
  spec.gradchecks.push_back({"transposed", transposed, input({3, 2})});

  spec.fixtures.push_back({spec.name, {"all"}, {"x"}, every});
  spec.fixtures.push_back({spec.name, {"t"}, {"x"}, transposed});
  const std::vector<std::tuple<std::string, std::vector<int64_t>, KeepDim>> cases = {
      {"d1", {1}, KeepDim::no},
      {"d02k", {0, 2}, KeepDim::yes},
      {"dneg", {-1}, KeepDim::no},
      {"d13", {1, 3}, KeepDim::no},
      {"d023k", {0, -2, -1}, KeepDim::yes},
      {"d0", {0}, KeepDim::no}};
  for (const auto& [name, dims, keep] : cases)
    spec.fixtures.push_back({spec.name, {name}, {"x"}, along(dims, keep)});
}

}  // namespace rg::testing
