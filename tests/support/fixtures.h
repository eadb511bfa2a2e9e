#pragma once
// PyTorch reference fixtures (tests/fixtures/<op>.safetensors, made by tools/make_fixtures.py)
// and tensor comparison with a readable failure message.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/safetensors.h"

namespace rg::testing {

class Fixture {
 public:
  // Loads tests/fixtures/<name>.safetensors.
  explicit Fixture(const std::string& name);
  // The tensor stored under key; fails loudly naming the file when missing.
  Tensor operator[](const std::string& key) const;
  bool has(const std::string& key) const { return file_.tensors.count(key) > 0; }

 private:
  std::string path_;
  SafetensorsFile file_;
};

// |actual - expected| <= atol + rtol·|expected| elementwise, same shape; the message names the
// worst element.
::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected,
                                     double atol = 1e-5, double rtol = 1e-4);

// The tolerance (absolute and relative) of CPU/CUDA parity tests, real or emulated: GPU math
// (libdevice, fused multiply-adds, another summation order) may differ from the CPU's by a few
// units in the last place of the dtype.
double device_parity_tolerance(DType dtype);

// A path unique to the running test (and process), so tests that CTest runs in parallel never
// share a file: <tmp>/rg_<pid>_<Suite>_<Test>_<name>.
std::string temp_path(const std::string& name);

// The cells of a comma-separated file (a run's metrics.csv), row by row; no quoting.
std::vector<std::vector<std::string>> read_csv(const std::string& path);

// Runs `body` and checks it throws rg::Error whose message contains every one of `parts`.
::testing::AssertionResult throws_error(const std::function<void()>& body,
                                        const std::vector<std::string>& parts);

}  // namespace rg::testing
