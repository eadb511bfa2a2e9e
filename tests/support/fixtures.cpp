#include "tests/support/fixtures.h"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace rg::testing {

Fixture::Fixture(const std::string& name)
    : path_(std::string(RG_FIXTURE_DIR) + "/" + name + ".safetensors"),
      file_(load_safetensors(path_)) {}

Tensor Fixture::operator[](const std::string& key) const {
  auto it = file_.tensors.find(key);
  RG_CHECK(it != file_.tensors.end(), "fixture ", path_, " has no tensor '", key,
           "' (regenerate with tools/make_fixtures.py)");
  return it->second;
}

::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected, double atol,
                                     double rtol) {
  if (!actual.defined() || !expected.defined())
    return ::testing::AssertionFailure() << "undefined tensor: actual " << actual.describe()
                                         << ", expected " << expected.describe();
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << "shape mismatch: actual " << actual.describe()
                                         << ", expected " << expected.describe();
  const std::vector<double> a = actual.to_vector<double>();
  const std::vector<double> e = expected.to_vector<double>();
  double worst = 0;
  std::size_t worst_i = 0;
  bool ok = true;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double err = std::fabs(a[i] - e[i]);
    const double excess = err - (atol + rtol * std::fabs(e[i]));
    // An infinity must match exactly: with e = inf the tolerance is inf too and inf - inf = nan
    // would let any finite value (or -inf) pass.
    const bool inf_mismatch = (std::isinf(a[i]) || std::isinf(e[i])) && a[i] != e[i];
    if (std::isnan(a[i]) != std::isnan(e[i]) || inf_mismatch || excess > 0) {
      if (ok || excess > worst) {
        worst = excess;
        worst_i = i;
      }
      ok = false;
    }
  }
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "tensors differ (" << actual.describe() << "): element " << worst_i << " is "
         << a[worst_i] << ", expected " << e[worst_i] << " (atol " << atol << ", rtol " << rtol
         << ")";
}

std::string temp_path(const std::string& name) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string path = ::testing::TempDir() + "rg_" + std::to_string(::getpid());
  if (info) path += std::string("_") + info->test_suite_name() + "_" + info->name();
  return path + "_" + name;
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream cols(line);
    for (std::string c; std::getline(cols, c, ',');) cells.push_back(c);
    rows.push_back(cells);
  }
  return rows;
}

::testing::AssertionResult throws_error(const std::function<void()>& body,
                                        const std::vector<std::string>& parts) {
  try {
    body();
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const std::string& p : parts)
      if (what.find(p) == std::string::npos)
        return ::testing::AssertionFailure()
               << "error message \"" << what << "\" lacks \"" << p << "\"";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-rg::Error: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

double device_parity_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return 1e-12;
    case DType::f32:
      return 1e-5;
    case DType::f16:
      return 2e-3;
    default:  // bf16, and integers (exact anyway)
      return 1.6e-2;
  }
}

}  // namespace rg::testing
