// The CUDA pointwise kernel (ops/elementwise/elementwise_kernels.cuh) run through the emulator
// against the CPU loop, for every functor a pointwise op launches — forward and backward — in
// every floating dtype, on contiguous, broadcast and strided operands of odd sizes.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "ops/add/add_functors.h"
#include "ops/add_relu/add_relu_functors.h"
#include "ops/binary_cross_entropy_with_logits/bce_functors.h"
#include "ops/div/div_functors.h"
#include "ops/elementwise/elementwise_kernels.cuh"
#include "ops/exp/exp_functors.h"
#include "ops/gelu/gelu_functors.h"
#include "ops/leaky_relu/leaky_relu_functors.h"
#include "ops/log/log_functors.h"
#include "ops/max/max_functors.h"
#include "ops/mse_loss/mse_loss_functors.h"
#include "ops/mul/mul_functors.h"
#include "ops/neg/neg_functors.h"
#include "ops/ops.h"
#include "ops/pow/pow_functors.h"
#include "ops/relu/relu_functors.h"
#include "ops/sigmoid/sigmoid_functors.h"
#include "ops/silu/silu_functors.h"
#include "ops/sqrt/sqrt_functors.h"
#include "ops/sub/sub_functors.h"
#include "ops/tanh/tanh_functors.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/support/fixtures.h"
// Functors of ops written by scripts/new_op.sh (new_op.sh adds the include above this line).

namespace rg {
namespace {
using namespace rg::testing;

enum class Layout { contiguous, broadcast, strided };
enum class Domain { any, positive };  // positive: log, sqrt, pow and divisions

// Operand k of an N-ary call, shaped for the layout; the broadcast result is [5, 6, 7].
Tensor operand(int k, Layout layout, DType dtype, Domain domain) {
  const double low = domain == Domain::positive ? 0.5 : -2.0, high = 2.0;
  auto values = [&](const Shape& shape) {
    return add(mul(rand(shape, {DType::f64}), high - low), low).to(dtype);
  };
  switch (layout) {
    case Layout::contiguous:
      return values({3, 367});  // 1101 elements: several blocks and grid-stride rounds
    case Layout::broadcast: {
      const Shape shapes[] = {{5, 1, 7}, {6, 7}, {5, 6, 1}, {7}, {1, 1, 1}};
      return values(shapes[k % 5]);
    }
    case Layout::strided:
      return values({43, 9}).transpose(0, 1);  // [9, 43] read column-major
  }
  return {};
}

template <class F, class... Ts>
void expect_parity(const std::string& name, F f, Domain domain, const Ts&... /*arity*/) {
  constexpr int N = sizeof...(Ts);
  for (DType dtype : kFloatingDtypes)
    for (Layout layout : {Layout::contiguous, Layout::broadcast, Layout::strided}) {
      std::vector<Tensor> in;
      for (int k = 0; k < N; ++k) in.push_back(operand(k, layout, dtype, domain));
      Shape shape = in[0].shape();
      for (int k = 1; k < N; ++k) shape = broadcast_shapes(shape, in[k].shape(), name);
      const Tensor expected = empty(shape, {dtype});
      // The emulated kernel writes a transposed (non-contiguous) output in the strided case.
      const Tensor actual = layout == Layout::strided
                                ? empty({shape[1], shape[0]}, {dtype}).transpose(0, 1)
                                : empty(shape, {dtype});
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        pointwise_into(OnCpu{}, name, f, expected, in[K]...);
        launch_pointwise(name, f, actual, nullptr, in[K]...);
      }
      (std::make_index_sequence<N>{});
      EXPECT_TRUE(all_close(actual, expected, 0, 0))
          << name << " " << dtype << " layout " << static_cast<int>(layout);
    }
}

// The arity of a functor, spelled as that many placeholder tensors.
const Tensor _;

TEST(PointwiseKernel, EveryFunctorMatchesTheCpuLoop) {
  const Domain any = Domain::any, pos = Domain::positive;
  expect_parity("add", AddFn{}, any, _, _);
  expect_parity("add_relu", AddReluFn{}, any, _, _);
  expect_parity("add_scalar", AddScalarFn{0.75}, any, _);
  expect_parity("sub", SubFn{}, any, _, _);
  expect_parity("sub_scalar", SubScalarFn{0.75}, any, _);
  expect_parity("rsub_scalar", RsubScalarFn{0.75}, any, _);
  expect_parity("mul", MulFn{}, any, _, _);
  expect_parity("mul_scalar", MulScalarFn{-1.5}, any, _);
  expect_parity("div", DivFn{}, pos, _, _);
  expect_parity("div_scalar", DivScalarFn{3.0}, any, _);
  expect_parity("rdiv_scalar", RdivScalarFn{3.0}, pos, _);
  expect_parity("div_grad_other", DivGradOtherFn{}, pos, _, _, _);
  expect_parity("rdiv_grad", RdivGradFn{3.0}, pos, _, _);
  expect_parity("exp", ExpFn{}, any, _);
  expect_parity("log", LogFn{}, pos, _);
  expect_parity("neg", NegFn{}, any, _);
  expect_parity("relu", ReluFn{}, any, _);
  expect_parity("relu_grad", ReluGradFn{}, any, _, _);
  expect_parity("leaky_relu", LeakyReluFn{0.1}, any, _);
  expect_parity("leaky_relu_grad", LeakyReluGradFn{0.1}, any, _, _);
  expect_parity("sigmoid", SigmoidFn{}, any, _);
  expect_parity("sigmoid_grad", SigmoidGradFn{}, any, _, _);
  expect_parity("tanh", TanhFn{}, any, _);
  expect_parity("tanh_grad", TanhGradFn{}, any, _, _);
  expect_parity("sqrt", SqrtFn{}, pos, _);
  expect_parity("sqrt_grad", SqrtGradFn{}, pos, _, _);
  expect_parity("pow_scalar", PowScalarFn{2.5}, pos, _);
  expect_parity("pow_scalar_grad", PowScalarGradFn{2.5}, pos, _, _);
  expect_parity("pow", PowFn{}, pos, _, _);
  expect_parity("pow_grad_base", PowGradBaseFn{}, pos, _, _, _);
  expect_parity("pow_grad_exponent", PowGradExponentFn{}, pos, _, _, _);
  expect_parity("rpow_scalar", RpowScalarFn{1.5}, any, _);
  expect_parity("rpow_grad", RpowGradFn{1.5}, pos, _, _);
  expect_parity("squared_error", SquaredErrorFn{}, any, _, _);
  expect_parity("squared_error_grad", SquaredErrorGradFn{0.25}, any, _, _, _);
  expect_parity("max_all_grad", MaxAllGradFn{0.5}, any, _, _, _);
  expect_parity("bce", BceWithLogitsFn{}, pos, _, _, _, _);
  expect_parity("bce_unit_pos_weight", UnitPosWeight<BceWithLogitsFn>{{}}, pos, _, _, _);
  expect_parity("bce_unit_weight", UnitWeight<BceWithLogitsFn>{{}}, pos, _, _, _);
  expect_parity("bce_unit_weights", UnitWeights<BceWithLogitsFn>{{}}, any, _, _);
  expect_parity("bce_grad_input", BceWithLogitsGradInputFn{0.5}, pos, _, _, _, _, _);
  expect_parity("bce_grad_target", BceWithLogitsGradTargetFn{0.5}, pos, _, _, _, _, _);
  expect_parity("bce_grad_input_unit_weights", UnitWeights<BceWithLogitsGradInputFn>{{0.5}}, any, _,
                _, _);
  expect_parity("silu", SiluFn{}, any, _);
  expect_parity("silu_grad", SiluGradFn{}, any, _, _);
  expect_parity("gelu", GeluFn{}, any, _);
  expect_parity("gelu_grad", GeluGradFn{}, any, _, _);
  // new_op.sh adds its parity lines above this line
}

TEST(PointwiseKernel, EmptyTensorsLaunchNothing) {
  const Tensor x = empty({0, 3});
  const Tensor out = empty({0, 3});
  launch_pointwise("relu", ReluFn{}, out, nullptr, x);  // a launch of 0 blocks would be an error
}

TEST(PointwiseKernel, TooManyDimsIsAClearError) {
  // Nine dims, not contiguous (broadcast along the last): the strided kernel's geometry.
  const Tensor x = ones({1, 1, 1, 1, 1, 1, 1, 2, 1}).expand({1, 1, 1, 1, 1, 1, 1, 2, 3});
  EXPECT_TRUE(
      throws_error([&] { launch_pointwise("relu", ReluFn{}, empty(x.shape()), nullptr, x); },
                   {"relu", "at most 8 dims"}));
}

}  // namespace
}  // namespace rg
