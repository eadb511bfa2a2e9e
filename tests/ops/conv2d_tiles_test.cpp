// The bf16 tile convolutions (ops/conv/conv2d/conv2d_tiles.h: AMX, AVX512-BF16) against the f64
// kernels on the same bf16 values, forward and both gradients, on shapes that hit every tail:
// channels that do not fill a 32-channel block, output channels under 16, one image and
// chunks with a last image short, taps folded into channels (3-channel layers), strides 1 to 3
// (phase planes), paddings 0 to 2 (shared and unshared layouts), dilation, kernels 1×1 to 5×5 and
// non-square, images down to 1×1, ResNet18's and airbench94's shapes; and the kernels' rounding to
// bf16, bit for bit. Each tile ISA runs where the machine has it (capped with CpuIsaCap to run the
// lower one too) and skips, saying why, where it has not; every pass on the tiles, also where
// the rule (conv2d_bf16_rule_test.cpp) would run the f32 kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/kernel_log.h"
#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_tiles.h"
#include "ops/ops.h"
#include "tests/ops/bf16_tiles_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;
using detail::tiles::TileIsa;

struct ConvCase {
  Shape x, w;
  Conv2dParams p;
  bool bias = false;
};

std::string describe(const ConvCase& c) {
  return shape_str(c.x) + " w " + shape_str(c.w) + " stride " + std::to_string(c.p.stride[0]) +
         "x" + std::to_string(c.p.stride[1]) + " pad " + std::to_string(c.p.padding[0]) + "x" +
         std::to_string(c.p.padding[1]) + " dil " + std::to_string(c.p.dilation[0]) + "x" +
         std::to_string(c.p.dilation[1]);
}

ConvCase make(Shape x, Shape w, int64_t s, int64_t pad, int64_t d = 1, bool bias = false) {
  return {x, w, Conv2dParams{{s, s}, {pad, pad}, {d, d}, 1}, bias};
}

// Shapes with every tail of the tile layouts.
std::vector<ConvCase> cases() {
  return {
      make({2, 32, 8, 8}, {32, 32, 3, 3}, 1, 1, 1, true),  // one block of each
      make({3, 5, 7, 9}, {7, 5, 3, 3}, 1, 1),              // channels and outputs partial
      make({1, 40, 6, 5}, {48, 40, 3, 3}, 1, 1, 1, true),  // 2 channel blocks, 1.5 o-pairs
      make({5, 24, 11, 11}, {40, 24, 3, 3}, 1, 0),         // no padding
      make({2, 16, 9, 9}, {16, 16, 5, 5}, 1, 2),           // 5×5, padding 2
      make({2, 16, 9, 10}, {16, 16, 3, 3}, 1, 2),          // padding past the reach: unshared
      make({2, 20, 12, 12}, {24, 20, 3, 3}, 2, 1),         // stride 2 (phases)
      make({2, 20, 13, 11}, {24, 20, 3, 3}, 3, 1),         // stride 3, odd sizes
      make({2, 33, 8, 8}, {17, 33, 1, 1}, 2, 0),           // 1×1 stride 2
      make({2, 33, 8, 8}, {17, 33, 1, 1}, 1, 0, 1, true),  // 1×1: no junk positions
      make({3, 3, 16, 16}, {32, 3, 3, 3}, 1, 1),           // a 3-channel stem
      make({3, 3, 16, 16}, {24, 3, 2, 2}, 1, 0),           // airbench's whitening 2×2
      make({2, 2, 9, 9}, {8, 2, 3, 3}, 2, 1, 1, true),     // folded taps over phases
      make({2, 3, 10, 10}, {8, 3, 3, 3}, 1, 2, 2),         // folded taps, dilated
      make({2, 16, 10, 10}, {16, 16, 3, 3}, 1, 2, 2),      // dilation 2
      make({4, 64, 1, 1}, {32, 64, 3, 3}, 1, 1),           // 1×1 images
      make({9, 64, 3, 3}, {64, 64, 3, 3}, 1, 1, 1, true),  // airbench's 3×3 images, chunks
      make({6, 64, 4, 4}, {64, 64, 3, 3}, 1, 1),           // ResNet18's 4×4 stage
      make({2, 64, 16, 16}, {32, 64, 3, 3}, 2, 1),         // ResNet18's stride-2 3×3
      {{2, 12, 7, 9}, {20, 12, 1, 3}, Conv2dParams{{1, 2}, {0, 1}, {1, 1}, 1}, true},  // mixed
  };
}

void check_forward(const ConvCase& c) {
  SCOPED_TRACE(describe(c));
  const Tensor x = random_bf16(c.x, 1), w = random_bf16(c.w, 2);
  const Tensor b = c.bias ? random_bf16({c.w[0]}, 3) : Tensor();
  const Tensor y = conv_forward<2>(x, w, b, c.p);
  ASSERT_EQ(y.dtype(), DType::bf16);
  const Tensor ref = conv_forward<2>(f64(x), f64(w), f64(b), c.p);
  const Tensor abs_sum = conv_forward<2>(abs64(x), abs64(w), abs64(b), c.p);
  EXPECT_TRUE(within_f32_sums(y, ref, abs_sum, c.w[1] * c.w[2] * c.w[3] + 1));
}

void check_backward_data(const ConvCase& c) {
  SCOPED_TRACE(describe(c));
  const Shape y_shape = conv_output_shape<2>("test", c.x, c.w, c.p);
  const Tensor gy = random_bf16(y_shape, 4), w = random_bf16(c.w, 5);
  const Tensor gx = conv_backward_data<2>(gy, w, c.x, c.p);
  ASSERT_EQ(gx.dtype(), DType::bf16);
  const Tensor ref = conv_backward_data<2>(f64(gy), f64(w), c.x, c.p);
  const Tensor abs_sum = conv_backward_data<2>(abs64(gy), abs64(w), c.x, c.p);
  EXPECT_TRUE(within_f32_sums(gx, ref, abs_sum, c.w[0] * c.w[2] * c.w[3]));
}

void check_backward_weight(const ConvCase& c) {
  SCOPED_TRACE(describe(c));
  const Shape y_shape = conv_output_shape<2>("test", c.x, c.w, c.p);
  const Tensor gy = random_bf16(y_shape, 6), x = random_bf16(c.x, 7);
  const Tensor gw = conv_backward_weight<2>(gy, x, c.w, c.p);
  ASSERT_EQ(gw.dtype(), DType::bf16);
  const Tensor ref = conv_backward_weight<2>(f64(gy), f64(x), c.w, c.p);
  const Tensor abs_sum = conv_backward_weight<2>(abs64(gy), abs64(x), c.w, c.p);
  EXPECT_TRUE(within_f32_sums(gw, ref, abs_sum, y_shape[0] * y_shape[2] * y_shape[3]));
}

class TileConv2d : public ::testing::TestWithParam<CpuIsa> {};

TEST_P(TileConv2d, ForwardMatchesF64OnEveryTail) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  Bf16KernelsScope on_tiles(Bf16ConvKernels::tiles);
  for (const ConvCase& c : cases()) check_forward(c);
}

TEST_P(TileConv2d, BackwardDataMatchesF64OnEveryTail) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  Bf16KernelsScope on_tiles(Bf16ConvKernels::tiles);
  for (const ConvCase& c : cases()) check_backward_data(c);
}

TEST_P(TileConv2d, BackwardWeightMatchesF64OnEveryTail) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  Bf16KernelsScope on_tiles(Bf16ConvKernels::tiles);
  for (const ConvCase& c : cases()) check_backward_weight(c);
}

// conv_transpose2d's gradient runs backward-weight on a gy that covers only the first outputs
// and its forward is backward-data with extra padding at the bottom (output_padding).
TEST_P(TileConv2d, ConvTransposeWithOutputPaddingMatchesF64) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  Bf16KernelsScope on_tiles(Bf16ConvKernels::tiles);
  const Tensor x = random_bf16({2, 24, 5, 6}, 8), w = random_bf16({24, 16, 3, 3}, 9);
  const Tensor y = conv_transpose2d(x, w, Tensor(), {2, 2}, {1, 1}, {1, 1});
  const Tensor ref = conv_transpose2d(f64(x), f64(w), Tensor(), {2, 2}, {1, 1}, {1, 1});
  const Tensor abs_sum = conv_transpose2d(abs64(x), abs64(w), Tensor(), {2, 2}, {1, 1}, {1, 1});
  ASSERT_EQ(y.shape(), ref.shape());
  EXPECT_TRUE(within_f32_sums(y, ref, abs_sum, 24 * 9));
  // Its weight gradient: conv2d's backward-weight with x = y's gradient, gy = x.
  const Tensor gy = random_bf16(y.shape(), 10);
  const Tensor xr = x.detach().set_requires_grad(true), wr = w.detach().set_requires_grad(true);
  conv_transpose2d(xr, wr, Tensor(), {2, 2}, {1, 1}, {1, 1}).backward(gy);
  const Tensor x64 = f64(x).set_requires_grad(true), w64 = f64(w).set_requires_grad(true);
  conv_transpose2d(x64, w64, Tensor(), {2, 2}, {1, 1}, {1, 1}).backward(f64(gy));
  const Tensor xa = abs64(x).set_requires_grad(true), wa = abs64(w).set_requires_grad(true);
  conv_transpose2d(xa, wa, Tensor(), {2, 2}, {1, 1}, {1, 1}).backward(abs64(gy));
  EXPECT_TRUE(within_f32_sums(wr.grad(), w64.grad(), wa.grad(), 2 * 5 * 6));
  EXPECT_TRUE(within_f32_sums(xr.grad(), x64.grad(), xa.grad(), 16 * 9));
}

// conv_transpose2d's forward is conv2d's backward-data on the tiles with the transposed
// convolution's bias added in f32 before the one rounding.
TEST_P(TileConv2d, ConvTransposeForwardWithBiasRunsOnTheTiles) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  Bf16KernelsScope on_tiles(Bf16ConvKernels::tiles);
  const Tensor x = random_bf16({2, 24, 6, 7}, 17), w = random_bf16({24, 16, 3, 3}, 18);
  const Tensor b = random_bf16({16}, 19);
  for (const int64_t stride : {1, 2}) {
    SCOPED_TRACE("stride " + std::to_string(stride));
    const Tensor y = conv_transpose2d(x, w, b, {stride, stride}, {1, 1});
    ASSERT_EQ(y.dtype(), DType::bf16);
    const Tensor ref = conv_transpose2d(f64(x), f64(w), f64(b), {stride, stride}, {1, 1});
    const Tensor abs_sum = conv_transpose2d(abs64(x), abs64(w), abs64(b), {stride, stride}, {1, 1});
    ASSERT_EQ(y.shape(), ref.shape());
    EXPECT_TRUE(within_f32_sums(y, ref, abs_sum, 24 * 9 + 1));
    const std::string expected =
        GetParam() == CpuIsa::amx ? "bf16 tiles (amx)" : "bf16 tiles (avx512_bf16)";
    bool found = false;
    for (const KernelChoice& k : kernel_choices())
      found = found || (k.op == "conv2d_backward_data" && k.kernel == expected &&
                        k.problem.find(shape_str(y.shape())) != std::string::npos);
    EXPECT_TRUE(found) << "conv_transpose2d's forward did not run on " << expected;
  }
}

// Every image's outputs are computed by one thread in a fixed order: the same bits for 1 and
// 2 threads. Backward-weight sums a fixed part of the batch per thread: the same bits from run
// to run.
TEST_P(TileConv2d, ForwardIsIndependentOfThreadsAndBackwardWeightRepeats) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  Bf16KernelsScope on_tiles(Bf16ConvKernels::tiles);
  const ConvCase c = make({7, 40, 9, 9}, {48, 40, 3, 3}, 1, 1, 1, true);
  const Tensor x = random_bf16(c.x, 11), w = random_bf16(c.w, 12), b = random_bf16({48}, 13);
  const int threads = num_threads();
  set_num_threads(1);
  const std::vector<float> one = conv_forward<2>(x, w, b, c.p).to_vector<float>();
  set_num_threads(2);
  const std::vector<float> two = conv_forward<2>(x, w, b, c.p).to_vector<float>();
  const Tensor gy = random_bf16(conv_output_shape<2>("test", c.x, c.w, c.p), 14);
  const std::vector<float> gw1 = conv_backward_weight<2>(gy, x, c.w, c.p).to_vector<float>();
  const std::vector<float> gw2 = conv_backward_weight<2>(gy, x, c.w, c.p).to_vector<float>();
  set_num_threads(threads);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * 4), 0);
  EXPECT_EQ(std::memcmp(gw1.data(), gw2.data(), gw1.size() * 4), 0);
}

TEST_P(TileConv2d, NanAndInfinityPropagate) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  Bf16KernelsScope on_tiles(Bf16ConvKernels::tiles);
  std::vector<float> xs(2 * 32 * 4 * 4, 1.0f);
  xs[5] = std::numeric_limits<float>::quiet_NaN();           // image 0, channel 0
  xs[32 * 16 + 7] = std::numeric_limits<float>::infinity();  // image 1, channel 0
  const Tensor x = from_vector(xs, {2, 32, 4, 4}).to(DType::bf16);
  const Tensor w = full({16, 32, 1, 1}, 0.5).to(DType::bf16);
  const std::vector<float> y = conv_forward<2>(x, w, Tensor(), Conv2dParams{}).to_vector<float>();
  EXPECT_TRUE(std::isnan(y[5]));
  EXPECT_TRUE(std::isinf(y[16 * 16 + 7]) && y[16 * 16 + 7] > 0);
  EXPECT_EQ(y[0], 16.0f);  // 32 channels × 1 × 0.5, exact
}

TEST_P(TileConv2d, KernelChoiceIsNoted) {
  SKIP_WITHOUT(GetParam());
  CpuIsaCap cap(GetParam());
  Bf16KernelsScope on_tiles(Bf16ConvKernels::tiles);
  const Tensor x = random_bf16({1, 8, 5, 5}, 15), w = random_bf16({8, 8, 3, 3}, 16);
  conv_forward<2>(x, w, Tensor(), Conv2dParams{{1, 1}, {1, 1}, {1, 1}, 1});
  const std::string expected =
      GetParam() == CpuIsa::amx ? "bf16 tiles (amx)" : "bf16 tiles (avx512_bf16)";
  bool found = false;
  for (const KernelChoice& k : kernel_choices())
    found = found || (k.op == "conv2d" && k.kernel == expected &&
                      k.problem.find("[1, 8, 5, 5]") != std::string::npos);
  EXPECT_TRUE(found) << "no note of " << expected;
}

INSTANTIATE_TEST_SUITE_P(Isa, TileConv2d, ::testing::Values(CpuIsa::amx, CpuIsa::avx512_bf16),
                         [](const auto& info) { return std::string(cpu_isa_name(info.param)); });

// Below the bf16 ISAs the same calls take the f32 kernels on widened copies.
TEST(TileConv2dFallback, WithoutBf16HardwareTheF32KernelsRun) {
  CpuIsaCap cap(CpuIsa::avx512);
  detail::tiles::TileIsa isa;
  EXPECT_FALSE(detail::tiles::tile_isa_available(isa));
  check_forward(make({2, 16, 6, 6}, {16, 16, 3, 3}, 1, 1));
}

TEST(TileConv2dFallback, BadInputIsANamedErrorOnTheTilePathToo) {
  const Tensor x = random_bf16({1, 8, 5, 5}, 17), w = random_bf16({8, 4, 3, 3}, 18);
  EXPECT_TRUE(throws_error([&] { conv_forward<2>(x, w, Tensor(), Conv2dParams{}); },
                           {"conv2d", "8 channels", "[8, 4, 3, 3]"}));
  const Tensor wf = random_bf16({8, 8, 3, 3}, 19).to(DType::f32);
  EXPECT_TRUE(throws_error([&] { conv_forward<2>(x, wf, Tensor(), Conv2dParams{}); }, {"conv2d"}));
}

// The rounding of the tile kernels' f32 sums to bf16 is core/half.h's, bit for bit: round to
// nearest even on the 16 dropped bits (ties to even, both ways), overflow to infinity,
// denormals rounded like any value (not flushed), NaN → a quiet NaN keeping sign and payload's
// top bits. Every upper half (sign, exponent, top mantissa: 65536 values) with the low halves
// that decide the rounding.
TEST(TileConv2dRounding, RoundsToNearestEvenAndKeepsNanBitForBit) {
  SKIP_WITHOUT(CpuIsa::avx512_bf16);
  const uint32_t lows[] = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x1234, 0xC000};
  std::vector<float> in;
  for (uint32_t hi = 0; hi < 0x10000; ++hi)
    for (uint32_t lo : lows) in.push_back(detail::bits_float((hi << 16) | lo));
  // Denormals amid normal values (the instruction's flush must not leak into their vector).
  for (uint32_t lo : {0x00000001u, 0x00008000u, 0x0000FFFFu, 0x807FFFFFu, 0x00018000u})
    in.insert(in.end(), {1.5f, detail::bits_float(lo), -2.0f});
  in.push_back(1.0f);  // a tail shorter than a vector
  std::vector<BFloat16> out(in.size());
  detail::tiles::round_to_bf16_kernels(in.data(), out.data(), static_cast<int64_t>(in.size()));
  for (std::size_t i = 0; i < in.size(); ++i) {
    const uint16_t expected = BFloat16(in[i]).bits;
    ASSERT_EQ(out[i].bits, expected) << "input bits 0x" << std::hex << detail::float_bits(in[i]);
  }
  // The rule, spelled out on a few values.
  const auto round = [](uint32_t u) {
    const float f = detail::bits_float(u);
    BFloat16 b;
    detail::tiles::round_to_bf16_kernels(&f, &b, 1);
    return b.bits;
  };
  EXPECT_EQ(round(0x3F808000), 0x3F80);  // tie, even below: down
  EXPECT_EQ(round(0x3F818000), 0x3F82);  // tie, odd below: up
  EXPECT_EQ(round(0x3F808001), 0x3F81);  // above the tie: up
  EXPECT_EQ(round(0x7F7FFFFF), 0x7F80);  // the largest f32 overflows to +inf
  EXPECT_EQ(round(0x00008000), 0x0000);  // a denormal tie: to even (zero)
  EXPECT_EQ(round(0x00018000), 0x0002);  // a denormal, rounded, not flushed
  EXPECT_EQ(round(0xFFC00001), 0xFFC0);  // a negative quiet NaN stays one
  EXPECT_EQ(round(0x7F800001), 0x7FC0);  // a signalling NaN becomes quiet, not infinity
}

TEST(CpuFeatures, CapsNestAndNamesParse) {
  const CpuIsa machine = cpu_isa();
  {
    CpuIsaCap cap(CpuIsa::avx2);
    EXPECT_LE(static_cast<int>(cpu_isa()), static_cast<int>(CpuIsa::avx2));
    {
      CpuIsaCap inner(CpuIsa::generic);
      EXPECT_EQ(cpu_isa(), CpuIsa::generic);
    }
    EXPECT_LE(static_cast<int>(cpu_isa()), static_cast<int>(CpuIsa::avx2));
  }
  EXPECT_EQ(cpu_isa(), machine);
  for (CpuIsa isa :
       {CpuIsa::generic, CpuIsa::avx2, CpuIsa::avx512, CpuIsa::avx512_bf16, CpuIsa::amx})
    EXPECT_EQ(parse_cpu_isa(cpu_isa_name(isa)), isa);
  EXPECT_TRUE(throws_error([] { parse_cpu_isa("avx9000"); }, {"avx9000", "amx"}));
  // The machine's level agrees with its features.
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(machine_has(CpuIsa::amx), f.amx_bf16 && f.amx_granted && f.avx512_bf16);
  EXPECT_FALSE(cpu_isa_note().empty());
}

}  // namespace
}  // namespace rg
