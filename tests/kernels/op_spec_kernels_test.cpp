// Every op's emulated CUDA kernels (the `kernels` of its spec, ops/<op>/<op>_spec.cpp) against
// its CPU kernels, one test per op: `Spec/PointwiseKernels.MatchTheCpuLoop/silu` for the functors
// of pointwise ops, `Spec/EmulatedKernels.MatchTheCpu/<op>` for an op's own kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/support/fixtures.h"
#include "tests/support/op_spec.h"

namespace rg::testing {
namespace {

void expect_kernels_match(const OpSpec& spec, KernelKind kind) {
  for (const KernelCheck& check : spec.kernels) {
    if (check.kind != kind) continue;
    SCOPED_TRACE(check.label);
    for (const KernelResult& r : check.run()) {
      const double tol = r.match == Match::bits ? 0 : device_parity_tolerance(r.actual.dtype());
      EXPECT_TRUE(all_close(r.actual, r.expected, tol, tol)) << r.label;
    }
  }
}

std::vector<std::string> specs_with_kernels(KernelKind kind) {
  std::vector<std::string> names;
  for (const OpSpec& s : all_specs())
    if (std::any_of(s.kernels.begin(), s.kernels.end(),
                    [&](const KernelCheck& c) { return c.kind == kind; }))
      names.push_back(s.name);
  return names;
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

// The op's own kernels (<op>_kernels.cuh).
class EmulatedKernels : public ::testing::TestWithParam<std::string> {};

TEST_P(EmulatedKernels, MatchTheCpu) {
  expect_kernels_match(spec(GetParam()), KernelKind::own);
}

// Empty where no op in the build has kernels of its own with a spec check (scripts/test_new_op.sh
// builds a few ops only), as the other generic suites may be.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EmulatedKernels);
INSTANTIATE_TEST_SUITE_P(Spec, EmulatedKernels,
                         ::testing::ValuesIn(specs_with_kernels(KernelKind::own)), param_name);

// Each functor the op and its backward launch in the pointwise engine's kernel
// (ops/elementwise/elementwise_kernels.cuh), in every dtype and layout, bit for bit.
class PointwiseKernels : public ::testing::TestWithParam<std::string> {};

TEST_P(PointwiseKernels, MatchTheCpuLoop) {
  expect_kernels_match(spec(GetParam()), KernelKind::pointwise_engine);
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PointwiseKernels);
INSTANTIATE_TEST_SUITE_P(Spec, PointwiseKernels,
                         ::testing::ValuesIn(specs_with_kernels(KernelKind::pointwise_engine)),
                         param_name);

}  // namespace
}  // namespace rg::testing
