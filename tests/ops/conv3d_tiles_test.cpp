// bf16 conv3d and conv_transpose3d on the tile GEMM (ops/conv/conv3d/conv3d_tiles.h: AMX,
// AVX512-BF16) against the f64 kernels on the same bf16 values, forward and both gradients, with
// the bound of one bf16 rounding of an f32 sum that tests/ops/conv2d_tiles_test.cpp states:
// |tile − exact| <= 2^-8·|exact| + 2^-23·K·Σ|terms|. Shapes: stride 2 and mixed strides,
// padding (also past the kernel's reach), dilation, odd sizes, bias, batch > 1, one volume
// (slabs of output depths), groups, 1×1×1 (columns = the volume), more than 32 channels and
// outputs (tails of the tiles). Each ISA runs where the machine has it (capped with CpuIsaCap
// to run AVX512-BF16 on an AMX machine) and skips, saying why, where it has not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/kernel_log.h"
#include "core/thread_pool.h"
#include "ops/ops.h"
#include "tests/ops/bf16_tiles_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

struct Conv3dCase {
  Shape x, w;
  Conv3dParams p;
  bool bias = false;
};

std::string triple(const Conv3dTriple& t) {
  return std::to_string(t[0]) + "x" + std::to_string(t[1]) + "x" + std::to_string(t[2]);
}
std::string describe(const Conv3dCase& c) {
  return shape_str(c.x) + " w " + shape_str(c.w) + " stride " + triple(c.p.stride) + " pad " +
         triple(c.p.padding) + " dil " + triple(c.p.dilation) + " groups " +
         std::to_string(c.p.groups) + (c.bias ? " bias" : "");
}

Conv3dCase make(Shape x, Shape w, int64_t s, int64_t pad, int64_t d = 1, bool bias = false,
                int64_t groups = 1) {
  return {x, w, Conv3dParams{{s, s, s}, {pad, pad, pad}, {d, d, d}, groups}, bias};
}

std::vector<Conv3dCase> cases() {
  return {
      make({2, 16, 5, 6, 7}, {12, 16, 3, 3, 3}, 1, 1, 1, true),   // stride 1: flipped backward
      make({2, 1, 6, 7, 8}, {16, 1, 3, 3, 3}, 1, 1, 1, true),     // 1 channel: col2vol backward
      make({2, 5, 7, 9, 6}, {7, 5, 3, 3, 3}, 2, 1, 1, true),      // stride 2, odd sizes
      make({3, 20, 6, 6, 5}, {40, 20, 3, 3, 3}, 2, 1),            // K = 540, 40 outputs
      make({1, 6, 7, 7, 7}, {8, 6, 3, 3, 3}, 1, 2, 2, true),      // dilation 2, one volume
      make({2, 4, 5, 5, 5}, {6, 4, 1, 1, 1}, 1, 1),               // padding past the reach
      make({3, 33, 3, 4, 5}, {17, 33, 1, 1, 1}, 1, 0, 1, true),   // 1×1×1: columns = volume
      make({2, 8, 4, 5, 6}, {6, 4, 3, 3, 3}, 1, 1, 1, true, 2),   // groups 2
      make({2, 8, 5, 5, 7}, {6, 4, 3, 3, 3}, 2, 0, 1, false, 2),  // groups 2, stride 2
      {{2, 4, 5, 8, 9}, {6, 4, 2, 3, 3}, Conv3dParams{{1, 2, 3}, {0, 1, 2}, {1, 1, 2}, 1}, true},
  };
}

int64_t taps(const Shape& w) {
  return w[2] * w[3] * w[4];
}

void check_forward(const Conv3dCase& c) {
  SCOPED_TRACE(describe(c));
  const Tensor x = random_bf16(c.x, 1), w = random_bf16(c.w, 2);
  const Tensor b = c.bias ? random_bf16({c.w[0]}, 3) : Tensor();
  const Tensor y = conv_forward<3>(x, w, b, c.p);
  ASSERT_EQ(y.dtype(), DType::bf16);
  const Tensor ref = conv_forward<3>(f64(x), f64(w), f64(b), c.p);
  const Tensor abs_sum = conv_forward<3>(abs64(x), abs64(w), abs64(b), c.p);
  EXPECT_TRUE(within_f32_sums(y, ref, abs_sum, c.w[1] * taps(c.w) + 1));
}

void check_backward_data(const Conv3dCase& c) {
  SCOPED_TRACE(describe(c));
  const Shape y_shape = conv_output_shape<3>("test", c.x, c.w, c.p);
  const Tensor gy = random_bf16(y_shape, 4), w = random_bf16(c.w, 5);
  const Tensor gx = conv_backward_data<3>(gy, w, c.x, c.p);
  ASSERT_EQ(gx.dtype(), DType::bf16);
  const Tensor ref = conv_backward_data<3>(f64(gy), f64(w), c.x, c.p);
  const Tensor abs_sum = conv_backward_data<3>(abs64(gy), abs64(w), c.x, c.p);
  EXPECT_TRUE(within_f32_sums(gx, ref, abs_sum, c.w[0] / c.p.groups * taps(c.w)));
}

void check_backward_weight(const Conv3dCase& c) {
  SCOPED_TRACE(describe(c));
  const Shape y_shape = conv_output_shape<3>("test", c.x, c.w, c.p);
  const Tensor gy = random_bf16(y_shape, 6), x = random_bf16(c.x, 7);
  const Tensor gw = conv_backward_weight<3>(gy, x, c.w, c.p);
  ASSERT_EQ(gw.dtype(), DType::bf16);
  const Tensor ref = conv_backward_weight<3>(f64(gy), f64(x), c.w, c.p);
  const Tensor abs_sum = conv_backward_weight<3>(abs64(gy), abs64(x), c.w, c.p);
  EXPECT_TRUE(within_f32_sums(gw, ref, abs_sum, y_shape[0] * y_shape[2] * y_shape[3] * y_shape[4]));
}

// Whether `op` noted the tile kernel of `isa` (+ `suffix`) for a problem naming `x`.
bool noted(const std::string& op, CpuIsa isa, const Shape& x, const std::string& suffix = "") {
  const std::string expected =
      (isa == CpuIsa::amx ? "bf16 tiles (amx)" : "bf16 tiles (avx512_bf16)") + suffix;
  for (const KernelChoice& k : kernel_choices())
    if (k.op == op && k.kernel == expected && k.problem.find(shape_str(x)) != std::string::npos)
      return true;
  return false;
}

class TileConv3d : public ::testing::TestWithParam<CpuIsa> {};

TEST_P(TileConv3d, ForwardMatchesF64) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  for (const Conv3dCase& c : cases()) check_forward(c);
  EXPECT_TRUE(noted("conv3d", GetParam(), cases()[0].x));
}

TEST_P(TileConv3d, BackwardDataMatchesF64) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  for (const Conv3dCase& c : cases()) check_backward_data(c);
  EXPECT_TRUE(noted("conv3d_backward_data", GetParam(), cases()[1].x));  // col2vol
  EXPECT_TRUE(noted("conv3d_backward_data", GetParam(), cases()[2].x));  // col2vol
  EXPECT_TRUE(noted("conv3d_backward_data", GetParam(), cases()[0].x, ", flipped forward"));
}

TEST_P(TileConv3d, BackwardWeightMatchesF64) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  for (const Conv3dCase& c : cases()) check_backward_weight(c);
  EXPECT_TRUE(noted("conv3d_backward_weight", GetParam(), cases()[2].x));
}

// conv_transpose3d's forward is conv3d's backward-data with its bias added in f32 before the
// rounding; its gradients are conv3d's forward and backward-weight (gy covering only the first
// outputs where output_padding adds some).
TEST_P(TileConv3d, ConvTranspose3dMatchesF64) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  const Conv3dTriple s{2, 2, 2}, pad{1, 1, 1}, out_pad{1, 0, 1};
  const Tensor x = random_bf16({2, 12, 3, 4, 5}, 8), w = random_bf16({12, 8, 3, 3, 3}, 9);
  const Tensor b = random_bf16({8}, 10);
  const Tensor y = conv_transpose3d(x, w, b, s, pad, out_pad);
  ASSERT_EQ(y.dtype(), DType::bf16);
  const Tensor ref = conv_transpose3d(f64(x), f64(w), f64(b), s, pad, out_pad);
  const Tensor abs_sum = conv_transpose3d(abs64(x), abs64(w), abs64(b), s, pad, out_pad);
  ASSERT_EQ(y.shape(), ref.shape());
  EXPECT_TRUE(within_f32_sums(y, ref, abs_sum, 12 * 27 + 1));
  EXPECT_TRUE(noted("conv3d_backward_data", GetParam(), y.shape()));
  // Stride 1 (the flipped forward), with its bias.
  const Tensor y1 = conv_transpose3d(x, w, b);
  const Tensor ref1 = conv_transpose3d(f64(x), f64(w), f64(b));
  EXPECT_TRUE(
      within_f32_sums(y1, ref1, conv_transpose3d(abs64(x), abs64(w), abs64(b)), 12 * 27 + 1));
  // Its gradients.
  const Tensor gy = random_bf16(y.shape(), 11);
  const Tensor xr = x.detach().set_requires_grad(true), wr = w.detach().set_requires_grad(true);
  conv_transpose3d(xr, wr, Tensor(), s, pad, out_pad).backward(gy);
  const Tensor x64 = f64(x).set_requires_grad(true), w64 = f64(w).set_requires_grad(true);
  conv_transpose3d(x64, w64, Tensor(), s, pad, out_pad).backward(f64(gy));
  const Tensor xa = abs64(x).set_requires_grad(true), wa = abs64(w).set_requires_grad(true);
  conv_transpose3d(xa, wa, Tensor(), s, pad, out_pad).backward(abs64(gy));
  EXPECT_TRUE(within_f32_sums(wr.grad(), w64.grad(), wa.grad(), 2 * 3 * 4 * 5));
  EXPECT_TRUE(within_f32_sums(xr.grad(), x64.grad(), xa.grad(), 8 * 27));
}

// Every forward output is summed by one thread in a fixed order: the same bits for 1 and 2
// threads. Backward-weight adds its per-thread partials in a fixed order: the same bits run to
// run.
TEST_P(TileConv3d, ForwardIsIndependentOfThreadsAndBackwardWeightRepeats) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  const Conv3dCase c = make({3, 10, 6, 7, 5}, {20, 10, 3, 3, 3}, 1, 1, 1, true);
  const Tensor x = random_bf16(c.x, 12), w = random_bf16(c.w, 13), b = random_bf16({20}, 14);
  const int threads = num_threads();
  set_num_threads(1);
  const std::vector<float> one = conv_forward<3>(x, w, b, c.p).to_vector<float>();
  set_num_threads(2);
  const std::vector<float> two = conv_forward<3>(x, w, b, c.p).to_vector<float>();
  const Tensor gy = random_bf16(conv_output_shape<3>("test", c.x, c.w, c.p), 15);
  const std::vector<float> gw1 = conv_backward_weight<3>(gy, x, c.w, c.p).to_vector<float>();
  const std::vector<float> gw2 = conv_backward_weight<3>(gy, x, c.w, c.p).to_vector<float>();
  set_num_threads(threads);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * 4), 0);
  EXPECT_EQ(std::memcmp(gw1.data(), gw2.data(), gw1.size() * 4), 0);
}

INSTANTIATE_TEST_SUITE_P(Isa, TileConv3d, ::testing::Values(CpuIsa::amx, CpuIsa::avx512_bf16),
                         [](const auto& info) { return std::string(cpu_isa_name(info.param)); });

// Below the bf16 ISAs the same calls widen to the f32 kernels, with the same bound.
TEST(TileConv3dFallback, WithoutBf16HardwareTheF32KernelsRun) {
  CpuIsaCap cap(CpuIsa::avx512);
  const Conv3dCase c = make({2, 5, 6, 5, 7}, {6, 5, 3, 3, 3}, 2, 1, 1, true);
  check_forward(c);
  check_backward_data(c);
  check_backward_weight(c);
  for (const KernelChoice& k : kernel_choices())
    EXPECT_FALSE(k.op.rfind("conv3d", 0) == 0 &&
                 k.problem.find(shape_str(c.x)) != std::string::npos)
        << k.op << " " << k.problem << ": " << k.kernel;
}

}  // namespace
}  // namespace rg
