// The generic op suites: each runs over every op's spec (ops/<op>/<op>_spec.cpp,
// tests/support/op_spec.h) that has its part, one test per op —
// `Spec/Gradchecks.MatchFiniteDifferences/silu`. An op's tests that fit no generic suite stay in
// tests/ops/<op>_test.cpp. A suite may be empty in a build of a few ops (scripts/test_new_op.sh):
// GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST says so.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "core/config.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"
#include "tests/support/op_spec.h"

namespace rg::testing {
namespace {

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

class Gradchecks : public ::testing::TestWithParam<std::string> {};

TEST_P(Gradchecks, MatchFiniteDifferences) {
  for (const GradcheckCase& c : spec(GetParam()).gradchecks) {
    SCOPED_TRACE(c.label);
    EXPECT_TRUE(gradcheck(c.call, c.inputs(), {c.eps, c.atol, c.rtol}));
  }
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Gradchecks);
INSTANTIATE_TEST_SUITE_P(Spec, Gradchecks, ::testing::ValuesIn(specs_with(&OpSpec::gradchecks)),
                         param_name);

class Fixtures : public ::testing::TestWithParam<std::string> {};

TEST_P(Fixtures, MatchPyTorch) {
  for (const FixtureCase& c : spec(GetParam()).fixtures) {
    const Fixture f(c.file);
    for (const std::string& name : c.cases) {
      SCOPED_TRACE(c.file + " " + name);
      const std::string prefix = name.empty() ? "" : name + ".";
      const auto is_updated = [&](const std::string& key) {
        return std::any_of(c.updated.begin(), c.updated.end(),
                           [&](const auto& u) { return u.first == key; });
      };
      const auto gets_grad = [&](const std::string& key) {
        return std::find(c.without_grad.begin(), c.without_grad.end(), key) ==
                   c.without_grad.end() &&
               !is_updated(key);
      };
      Inputs in;
      for (const std::string& key : c.inputs) {
        Tensor t = is_updated(key) ? f[prefix + key].clone() : f[prefix + key];
        if (gets_grad(key)) t.set_requires_grad(true);
        in.push_back(t);
      }
      const Tensor y = c.call(in);
      EXPECT_TRUE(all_close(y, f[prefix + "y"], c.atol, c.rtol));
      for (const auto& [key, after] : c.updated) {
        const auto k = std::find(c.inputs.begin(), c.inputs.end(), key) - c.inputs.begin();
        EXPECT_TRUE(all_close(in[static_cast<std::size_t>(k)], f[prefix + after], c.atol, c.rtol))
            << key << " after the call";
      }
      y.backward(f[prefix + "gy"]);
      for (std::size_t k = 0; k < in.size(); ++k) {
        if (gets_grad(c.inputs[k])) {
          EXPECT_TRUE(all_close(in[k].grad(), f[prefix + "g" + c.inputs[k]], c.atol, c.rtol))
              << "gradient of " << c.inputs[k];
        }
      }
    }
  }
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Fixtures);
INSTANTIATE_TEST_SUITE_P(Spec, Fixtures, ::testing::ValuesIn(specs_with(&OpSpec::fixtures)),
                         param_name);

class BadInputs : public ::testing::TestWithParam<std::string> {};

TEST_P(BadInputs, AreErrorsNamingWhatIsWrong) {
  for (const BadInput& b : spec(GetParam()).bad_inputs)
    EXPECT_TRUE(throws_error(b.call, b.message));
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BadInputs);
INSTANTIATE_TEST_SUITE_P(Spec, BadInputs, ::testing::ValuesIn(specs_with(&OpSpec::bad_inputs)),
                         param_name);

// Without a GPU the "cuda:0" tensors wrap host memory (on_gpu) and are never read: an op must
// stop before touching data. With one, these ops run: tests/gpu checks them on device memory.
class DeviceErrors : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceErrors, NameTheOpOrTheDevice) {
  const OpSpec& s = spec(GetParam());
  for (const DeviceCase& c : s.devices) {
    SCOPED_TRACE(c.label);
    if (c.stop == Stop::no_kernel) {
      EXPECT_TRUE(throws_error(c.call, {s.name, "cuda:0"}));
    } else if (!kWithCuda) {
      // The output's allocation on cuda:0 is refused before any kernel is chosen.
      EXPECT_TRUE(throws_error(c.call, {"cuda:0", "no CUDA backend"}));
    } else if (cuda_device_count() == 0) {
      EXPECT_TRUE(throws_error(c.call, {"cuda:0", "no usable GPU"}));
    }
  }
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DeviceErrors);
INSTANTIATE_TEST_SUITE_P(Spec, DeviceErrors, ::testing::ValuesIn(specs_with(&OpSpec::devices)),
                         param_name);

// A logical cpu device (DataParallel's replicas on one CPU) runs the CPU kernels and keeps the
// result, and the gradients, there.
class LogicalCpu : public ::testing::TestWithParam<std::string> {};

TEST_P(LogicalCpu, KeepsTheResultAndGradientsThere) {
  const Device cpu1 = Device::cpu(1);
  for (const Sample& sample : spec(GetParam()).samples) {
    SCOPED_TRACE(sample.label);
    Inputs in;
    for (const Shape& shape : sample.shapes)
      in.push_back(uniform(shape, sample.range).to(DType::f32).to(cpu1).set_requires_grad(true));
    const Tensor y = sample.call(in);
    EXPECT_EQ(y.device(), cpu1);
    if (!y.requires_grad()) continue;  // an op without a gradient (count_correct): the result only
    y.backward(ones_like(y));
    for (const Tensor& x : in)
      if (x.grad().defined()) {
        EXPECT_EQ(x.grad().device(), cpu1);
      }
  }
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LogicalCpu);
INSTANTIATE_TEST_SUITE_P(Spec, LogicalCpu, ::testing::ValuesIn(specs_with(&OpSpec::samples)),
                         param_name);

// Every suite above can trust what it iterates.
TEST(OpSpecs, AreWellFormed) {
  std::set<std::string> names;
  for (const OpSpec& s : all_specs()) {
    SCOPED_TRACE(s.name);
    EXPECT_TRUE(std::regex_match(s.name, std::regex("[a-z0-9_]+")));
    EXPECT_TRUE(names.insert(s.name).second) << "two specs are named " << s.name;
    if (s.cuda == CudaKernel::yes) {
      EXPECT_FALSE(s.samples.empty()) << "an op that runs on a GPU has samples for the GPU tests";
    }
    for (const DeviceCase& c : s.devices)
      EXPECT_TRUE(c.stop == Stop::no_kernel || s.cuda == CudaKernel::yes)
          << c.label << ": an op without CUDA kernels never allocates on the GPU";
    for (const FixtureCase& c : s.fixtures) {
      EXPECT_FALSE(c.cases.empty()) << c.file;
      for (const auto& u : c.updated)
        EXPECT_NE(std::find(c.inputs.begin(), c.inputs.end(), u.first), c.inputs.end())
            << c.file << ": the updated input " << u.first << " is not an input";
    }
  }
}

}  // namespace
}  // namespace rg::testing
