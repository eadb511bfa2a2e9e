// The bf16 rule of ops/conv/conv2d (ops/conv/conv2d/README.md, "bf16: the tiles or f32, by a
// rule"): per ISA and shape, which passes of a bf16 convolution the tile kernels run and which the
// f32 kernels run on widened operands, and which convolutions autocast in bf16 leaves in f32 —
// pinned on ResNet18's and airbench94's layers (batch 128, where it was measured), for each ISA the
// machine has (capped to run the lower ones) and skipping, saying why, the ones it has not; the
// override (set_bf16_conv_kernels); and what autocast then computes: the f32 convolution, to
// the bit, or the bf16 one. The kernels themselves are conv2d_tiles_test.cpp's.
#include <gtest/gtest.h>

#include <optional>

#include "core/autocast.h"
#include "core/cpu_features.h"
#include "core/kernel_log.h"
#include "ops/conv/conv2d/conv2d_kernel.h"
#include "ops/ops.h"
#include "tests/ops/bf16_tiles_test_util.h"
#include "tests/support/fixtures.h"

namespace rg {
namespace {
using namespace rg::testing;

struct Layer {
  const char* name;
  Shape x, w;
  int64_t stride, pad;
  bool keeps_f32;  // on AVX512-BF16 under autocast
  Conv2dParams params() const { return {{stride, stride}, {pad, pad}, {1, 1}, 1}; }
};

// f32 where its Winograd F(4×4, 3×3) runs forward and backward-weight on planes its 4×4 tiles
// cover exactly; the tiles everywhere else.
const std::vector<Layer> kLayers = {
    {"stem 3→64 @32", {128, 3, 32, 32}, {64, 3, 3, 3}, 1, 1, false},
    {"64 @32", {128, 64, 32, 32}, {64, 64, 3, 3}, 1, 1, false},  // backward-weight F(2×2)
    {"64→128 stride 2", {128, 64, 32, 32}, {128, 64, 3, 3}, 2, 1, false},
    {"128 @16", {128, 128, 16, 16}, {128, 128, 3, 3}, 1, 1, true},
    {"1×1 64→128 stride 2", {128, 64, 32, 32}, {128, 64, 1, 1}, 2, 0, false},
    {"256 @8", {128, 256, 8, 8}, {256, 256, 3, 3}, 1, 1, true},
    {"512 @4", {128, 512, 4, 4}, {512, 512, 3, 3}, 1, 1, true},
    {"airbench94 64 @15", {128, 64, 15, 15}, {64, 64, 3, 3}, 1, 1, false},   // 4×4 tiles: 16×16
    {"airbench94 256 @7", {128, 256, 7, 7}, {256, 256, 3, 3}, 1, 1, false},  // 8×8
    {"airbench94 256 @3", {128, 256, 3, 3}, {256, 256, 3, 3}, 1, 1, false},  // direct in f32
};

// The f32 kernels are compiled for the build's -march (kAvx512 in conv2d_direct_common.h), the
// tiles for their ISA alone: a portable build (CI's sanitizer tree, -DRG_NATIVE=OFF) has no
// vectorised f32 Winograd to keep, so there autocast runs the tiles on every layer.
#ifdef __AVX512F__
constexpr bool kF32WinogradBuilt = true;
#else
constexpr bool kF32WinogradBuilt = false;
#endif

TEST(Bf16ConvRule, OnAvx512Bf16TheTilesRunAllButTheStrided3x3BackwardData) {
  SKIP_WITHOUT(CpuIsa::avx512_bf16);
  CpuIsaCap cap(CpuIsa::avx512_bf16);
  for (const Layer& l : kLayers) {
    SCOPED_TRACE(l.name);
    const Conv2dParams p = l.params();
    EXPECT_TRUE(conv2d_tiles_run(l.w, p, ConvPass::forward));
    EXPECT_TRUE(conv2d_tiles_run(l.w, p, ConvPass::backward_weight));
    EXPECT_EQ(conv2d_tiles_run(l.w, p, ConvPass::backward_data), !(l.stride == 2 && l.w[2] == 3));
    EXPECT_EQ(conv2d_bf16_autocast_keeps_f32(l.x, l.w, p), l.keeps_f32 && kF32WinogradBuilt);
  }
  // Grouped convolutions have no tile kernels: widened, and autocast leaves them in f32.
  const Conv2dParams grouped{{1, 1}, {1, 1}, {1, 1}, 32};
  EXPECT_FALSE(conv2d_tiles_run({128, 4, 3, 3}, grouped, ConvPass::forward));
  EXPECT_TRUE(conv2d_bf16_autocast_keeps_f32({128, 128, 32, 32}, {128, 4, 3, 3}, grouped));
}

TEST(Bf16ConvRule, OnAmxTheTilesRunEverything) {
  SKIP_WITHOUT(CpuIsa::amx);
  CpuIsaCap cap(CpuIsa::amx);
  for (const Layer& l : kLayers) {
    SCOPED_TRACE(l.name);
    for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weight})
      EXPECT_TRUE(conv2d_tiles_run(l.w, l.params(), pass));
    EXPECT_FALSE(conv2d_bf16_autocast_keeps_f32(l.x, l.w, l.params()));
  }
}

TEST(Bf16ConvRule, WithoutBf16DotProductsEverythingWidensAndAutocastKeepsF32) {
  CpuIsaCap cap(CpuIsa::avx512);
  for (const Layer& l : kLayers) {
    SCOPED_TRACE(l.name);
    EXPECT_FALSE(conv2d_tiles_run(l.w, l.params(), ConvPass::forward));
    EXPECT_TRUE(conv2d_bf16_autocast_keeps_f32(l.x, l.w, l.params()));
  }
}

TEST(Bf16ConvRule, TheOverrideRunsEveryPassOnOneKindAndAutocastCasts) {
  SKIP_WITHOUT(CpuIsa::avx512_bf16);
  const Layer& strided = kLayers[2];
  const Layer& kept = kLayers[3];
  {
    Bf16KernelsScope tiles(Bf16ConvKernels::tiles);
    EXPECT_TRUE(conv2d_tiles_run(strided.w, strided.params(), ConvPass::backward_data));
    EXPECT_FALSE(conv2d_bf16_autocast_keeps_f32(kept.x, kept.w, kept.params()));
  }
  {
    Bf16KernelsScope widened(Bf16ConvKernels::widened);
    EXPECT_FALSE(conv2d_tiles_run(strided.w, strided.params(), ConvPass::forward));
    EXPECT_FALSE(conv2d_bf16_autocast_keeps_f32(kept.x, kept.w, kept.params()));
  }
  EXPECT_EQ(bf16_conv_kernels(), Bf16ConvKernels::by_rule);  // the scopes restore it
}

// What autocast computes for a convolution the rule keeps in f32: the f32 convolution of the
// unrounded inputs, bit for bit, its gradients in f32, and a note naming the choice; for one it
// does not, the bf16 result. On any machine: each case follows the rule's own answer, uncapped
// and below the bf16 instructions (where every convolution keeps f32).
TEST(Bf16ConvRule, AutocastComputesWhatTheRuleChose) {
  const Conv2dParams p{{1, 1}, {1, 1}, {1, 1}, 1};
  for (const bool capped : {false, true})
    for (const Shape& xs : {Shape{2, 128, 16, 16}, Shape{2, 3, 16, 16}}) {
      std::optional<CpuIsaCap> cap;
      if (capped) cap.emplace(CpuIsa::avx512);
      const Shape ws{32, xs[1], 3, 3};
      SCOPED_TRACE(shape_str(xs) + (capped ? " capped at avx512" : ""));
      const Tensor x = randn(xs), w = randn(ws).set_requires_grad(true);
      const bool keep = conv2d_bf16_autocast_keeps_f32(xs, ws, p);
      EXPECT_TRUE(keep || !capped);  // so the f32 path is tested on every machine
      Tensor y;
      {
        AutocastGuard autocast(DType::bf16);
        y = conv2d(x, w, Tensor(), {1, 1}, {1, 1});
      }
      EXPECT_EQ(y.dtype(), keep ? DType::f32 : DType::bf16);
      if (!keep) continue;
      EXPECT_TRUE(all_close(y, conv2d(x, w.detach(), Tensor(), {1, 1}, {1, 1}), 0, 0));
      sum(y).backward();
      EXPECT_EQ(w.grad().dtype(), DType::f32);
      bool noted = false;
      for (const KernelChoice& k : kernel_choices())
        noted = noted || (k.kernel == "f32 kernels: autocast keeps f32 (the bf16 rule)" &&
                          k.problem.find(shape_str(xs)) != std::string::npos);
      EXPECT_TRUE(noted);
    }
}

}  // namespace
}  // namespace rg
