// The elementwise engine computes f16 and bf16 in float and rounds once at the end, so every
// pointwise op on 16-bit inputs must equal the f32 op on the same (widened) values, rounded to
// the 16-bit type — bit for bit.
#include <gtest/gtest.h>

#include <functional>

#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;

TEST(PointwiseHalf, EqualsF32RoundedForF16AndBf16) {
  const std::vector<std::pair<std::string, Binary>> ops = {
      {"exp", [](const Tensor& a, const Tensor&) { return exp(a); }},
      {"log", [](const Tensor&, const Tensor& b) { return log(b); }},
      {"sqrt", [](const Tensor&, const Tensor& b) { return sqrt(b); }},
      {"sigmoid", [](const Tensor& a, const Tensor&) { return sigmoid(a * 4.0); }},
      {"tanh", [](const Tensor& a, const Tensor&) { return tanh(a); }},
      {"leaky_relu", [](const Tensor& a, const Tensor&) { return leaky_relu(a, 0.1); }},
      {"relu", [](const Tensor& a, const Tensor&) { return relu(a); }},
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }},
      {"rdiv", [](const Tensor&, const Tensor& b) { return 3.0 / b; }},
      {"pow", [](const Tensor&, const Tensor& b) { return pow(b, 2.7); }},
      {"pow_tt", [](const Tensor& a, const Tensor& b) { return pow(b, a); }},
  };
  // 1961 values: several of the engine's 512-value blocks and a ragged tail, so the blocked
  // 16-bit path (vectorised widen / narrow) is covered end to end.
  Tensor a32 = randn({37, 53}) * 2.0;       // any sign
  Tensor b32 = rand({37, 53}) * 3.0 + 0.1;  // positive
  for (DType dt : {DType::f16, DType::bf16}) {
    Tensor a = cast(a32, dt), b = cast(b32, dt);
    for (const auto& [name, op] : ops) {
      SCOPED_TRACE(std::string(name) + " " + std::string(dtype_name(dt)));
      Tensor y = op(a, b);
      EXPECT_EQ(y.dtype(), dt);
      Tensor expected = cast(op(cast(a, DType::f32), cast(b, DType::f32)), dt);
      EXPECT_TRUE(all_close(y, expected, 0, 0));
    }
  }
}

}  // namespace
}  // namespace rg
