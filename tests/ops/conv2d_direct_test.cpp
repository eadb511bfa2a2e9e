// The direct convolution kernels (ops/conv/conv2d/conv2d_direct.h) against a plain loop, on shapes
// that hit every tail: output channels that do not fill a register tile, tap counts that do not
// fill a backward-weight tile, images narrower than one vector, groups, dilation, strides; the
// three forwards (by outputs, by channels, and Winograd on the 3×3 stride-1 shapes: odd sizes,
// paddings 0 to 2, groups, rows of tiles from under one vector to 2.4), both backward-weights
// and the backward-data by phases (whose phases have 0 to all of the taps) on every shape.
// conv2d routes to these kernels only where they pay (ResNet shapes), so they are called here
// directly; the last tests check that routing through the public op.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_direct.h"
#include "ops/conv/conv2d/conv2d_direct_common.h"
#include "ops/ops.h"
#include "tests/ops/conv2d_reference.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;
using detail::DirectConv;

using detail::DirectForward;
constexpr DirectForward kForwardKinds[] = {DirectForward::by_outputs, DirectForward::by_channels,
                                           DirectForward::winograd, DirectForward::winograd_4x4};
const char* forward_kind_name(DirectForward kind) {
  return kind == DirectForward::by_outputs    ? "forward by outputs"
         : kind == DirectForward::by_channels ? "forward by channels"
         : kind == DirectForward::winograd    ? "forward by Winograd F(2x2, 3x3)"
                                              : "forward by Winograd F(4x4, 3x3)";
}
// Winograd runs 3x3 stride-1 undilated kernels only, F(4x4) on rows of ⌈Wo/4⌉ tiles that fill
// whole vectors, alone or a few images side by side.
bool runs(const DirectConv& g, DirectForward kind) {
  if (kind == DirectForward::winograd_4x4) return detail::winograd4_applies(g);
  return kind != DirectForward::winograd || detail::winograd_applies(g);
}
using detail::DirectBackwardWeight;
constexpr DirectBackwardWeight kWeightKinds[] = {
    DirectBackwardWeight::padded_images, DirectBackwardWeight::gathered_rows,
    DirectBackwardWeight::winograd,      DirectBackwardWeight::winograd_shared_sums,
    DirectBackwardWeight::winograd_4x4,  DirectBackwardWeight::winograd_4x4_shared_sums};
const char* weight_kind_name(DirectBackwardWeight kind) {
  return kind == DirectBackwardWeight::padded_images   ? "backward-weight over padded images"
         : kind == DirectBackwardWeight::gathered_rows ? "backward-weight over gathered rows"
         : kind == DirectBackwardWeight::winograd      ? "backward-weight by Winograd F(2x2, 3x3)"
         : kind == DirectBackwardWeight::winograd_shared_sums
             ? "backward-weight by Winograd, shared sums"
         : kind == DirectBackwardWeight::winograd_4x4
             ? "backward-weight by Winograd F(4x4, 3x3)"
             : "backward-weight by Winograd F(4x4, 3x3), shared sums";
}
bool runs(const DirectConv& g, DirectBackwardWeight kind) {
  if (kind == DirectBackwardWeight::winograd_4x4 ||
      kind == DirectBackwardWeight::winograd_4x4_shared_sums)
    return detail::winograd4_applies(g);
  const bool winograd =
      kind == DirectBackwardWeight::winograd || kind == DirectBackwardWeight::winograd_shared_sums;
  return !winograd || detail::winograd_applies(g);
}

template <class T>
Tensor run_forward(const DirectConv& g, const Tensor& x, const Tensor& w, const Tensor& b,
                   DirectForward kind) {
  Tensor y = empty(y_shape(g), {x.dtype()});
  detail::direct_conv_forward<T>(g, x.data<T>(), w.data<T>(), b.defined() ? b.data<T>() : nullptr,
                                 y.data<T>(), kind);
  return y;
}

template <class T>
Tensor run_backward_weight(const DirectConv& g, const Tensor& gy, const Tensor& x,
                           DirectBackwardWeight kind) {
  Tensor gw = empty(w_shape(g), {x.dtype()});
  detail::direct_conv_backward_weight<T>(g, gy.data<T>(), x.data<T>(), gw.data<T>(), kind);
  return gw;
}

template <class T>
Tensor run_backward_data(const DirectConv& g, const Tensor& gy, const Tensor& w) {
  Tensor gx = empty(x_shape(g), {gy.dtype()});
  detail::direct_conv_backward_data<T>(g, gy.data<T>(), w.data<T>(), gx.data<T>());
  return gx;
}

// F(4×4)'s transforms multiply by up to 5 (Bᵀ) and 8 (Aᵀ) along each axis, and its f32 rounding
// grows with them: |error| / (u·scale) reached 28 on these shapes, forward or backward-weight
// (71 with Lavin & Gray's points, whose Aᵀ has −8 where ours has −1/8); the other kernels reach
// 6 (the f32 test's atol and rtol cover what passes their 4). Exactness is the f64 test's job
// (1e-12; F(4×4) is off by ~1e-15 there).
constexpr double kWinograd4Rounding = 40;

template <class T>
void check_against_reference(const DirectConv& g, double atol, double rtol) {
  const DType dt = std::is_same_v<T, float> ? DType::f32 : DType::f64;
  const Tensor x = grad_input(x_shape(g), -1, 1, 1).detach().to(dt);
  const Tensor w = grad_input(w_shape(g), -1, 1, 2).detach().to(dt);
  const Tensor b = grad_input({g.G * g.O}, -1, 1, 3).detach().to(dt);
  const Tensor gy = grad_input(y_shape(g), -1, 1, 4).detach().to(dt);
  const Tensor x64 = x.to(DType::f64), w64 = w.to(DType::f64), gy64 = gy.to(DType::f64);
  const Tensor xm = magnitude(x), wm = magnitude(w), gym = magnitude(gy);
  const Tensor y_scale = reference_forward(g, xm, wm, magnitude(b));
  const Tensor y_scale_nb = reference_forward(g, xm, wm, Tensor());
  for (DirectForward kind : kForwardKinds) {
    if (!runs(g, kind)) continue;
    SCOPED_TRACE(forward_kind_name(kind));
    const double rounding = kind == DirectForward::winograd_4x4 ? kWinograd4Rounding : 4;
    EXPECT_TRUE(close_to_reference<T>(run_forward<T>(g, x, w, b, kind),
                                      reference_forward(g, x64, w64, b.to(DType::f64)), y_scale,
                                      atol, rtol, rounding));
    EXPECT_TRUE(close_to_reference<T>(run_forward<T>(g, x, w, Tensor(), kind),
                                      reference_forward(g, x64, w64, Tensor()), y_scale_nb, atol,
                                      rtol, rounding));
  }
  const Tensor gw_scale = reference_backward_weight(g, gym, xm);
  for (DirectBackwardWeight kind : kWeightKinds) {
    if (!runs(g, kind)) continue;
    SCOPED_TRACE(weight_kind_name(kind));
    const bool f4 = kind == DirectBackwardWeight::winograd_4x4 ||
                    kind == DirectBackwardWeight::winograd_4x4_shared_sums;
    const double rounding = f4 ? kWinograd4Rounding : 4;
    EXPECT_TRUE(close_to_reference<T>(run_backward_weight<T>(g, gy, x, kind),
                                      reference_backward_weight(g, gy64, x64), gw_scale, atol, rtol,
                                      rounding));
  }
  SCOPED_TRACE("backward-data by phases");
  EXPECT_TRUE(close_to_reference<T>(run_backward_data<T>(g, gy, w),
                                    reference_backward_data(g, gy64, w64),
                                    reference_backward_data(g, gym, wm), atol, rtol));
}

const std::vector<std::pair<const char*, DirectConv>> kShapes = {
    {"3x3 pad 1, 5 outputs", make(2, 1, 3, 5, 7, 5, 3, 3, 1, 1)},
    {"2x3, groups, dilation", make(3, 2, 2, 6, 4, 3, 2, 3, 0, 2, 2, 1)},
    {"1x1, 9 outputs", make(2, 1, 7, 3, 3, 9, 1, 1, 0, 0)},
    {"padding wider than the kernel", make(2, 1, 3, 4, 5, 2, 1, 2, 2, 3)},
    {"one pixel", make(1, 1, 1, 1, 1, 2, 3, 3, 1, 1)},
    {"13 outputs, 45 taps", make(2, 1, 5, 8, 8, 13, 3, 3, 1, 1)},
    {"dilation 2, pad 2", make(2, 1, 4, 9, 10, 6, 3, 3, 2, 2, 2, 2)},
    {"resnet stage", make(3, 1, 16, 16, 16, 16, 3, 3, 1, 1)},
    {"wide image", make(1, 1, 2, 3, 37, 7, 3, 3, 1, 1)},
    {"stride 2", make(2, 1, 3, 8, 8, 5, 3, 3, 1, 1, 1, 1, 2, 2)},
    {"stride 2, odd size", make(2, 1, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1, 2, 2)},
    {"1x1 stride 2", make(2, 1, 6, 8, 6, 7, 1, 1, 0, 0, 1, 1, 2, 2)},
    {"stride (3, 2), dilation, groups", make(2, 2, 2, 11, 9, 3, 3, 2, 1, 2, 2, 1, 3, 2)},
    // MobileNetV2's depthwise convolutions: one channel per group, many groups.
    {"depthwise 3x3", make(2, 12, 1, 10, 9, 1, 3, 3, 1, 1)},
    {"depthwise 3x3 stride 2", make(2, 12, 1, 16, 16, 1, 3, 3, 1, 1, 1, 1, 2, 2)},
    // Forward by channels takes small images several at a time (here 15, then 2) and lists
    // their outputs across images in its tiles.
    {"3x3 images, batches of 15", make(17, 2, 3, 3, 3, 5, 3, 3, 1, 1)},
    {"4x4 stride 2, 40 channels", make(9, 1, 6, 8, 7, 40, 3, 3, 1, 1, 1, 1, 2, 2)},
    // Wide enough that the threads share the packing of the phases' weights (4 phases, 11
    // blocks of channels of gx each).
    {"8x8 stride 2, 64 channels", make(2, 1, 64, 8, 8, 64, 3, 3, 1, 1, 1, 1, 2, 2)},
    // Backward-weight over gathered rows: a batch of 2560 positions leaves room for one tile
    // of taps per block (11 blocks, the last one 3 taps), 20 channels in 2 or 3 blocks.
    {"2560 positions, 63 taps", make(40, 1, 7, 8, 8, 20, 3, 3, 1, 1)},
    // The forward by outputs on AVX2 sums 64 channels in passes of ~12 KB of image rows
    // (f32: 45 channels, then 19; f64: 22, 22, 20).
    {"64 channels in passes", make(2, 1, 64, 16, 16, 5, 3, 3, 1, 1)},
    // Winograd: odd outputs (the last row and column of 2×2 tiles half outside), no padding,
    // padding 2 and padding on one axis only; rows of tiles shorter than a vector (tile lists
    // across images) and of whole vectors (row units: 32 and 31 outputs wide).
    {"3x3 pad 0, odd outputs", make(2, 1, 5, 11, 9, 6, 3, 3, 0, 0)},
    {"3x3 pad 2", make(2, 1, 4, 7, 12, 5, 3, 3, 2, 2)},
    {"3x3 pad (0, 1)", make(3, 1, 3, 6, 17, 4, 3, 3, 0, 1)},
    {"3x3 pad (2, 0), 32 wide", make(2, 1, 3, 9, 34, 4, 3, 3, 2, 0)},
    {"3x3 pad (0, 1), 31 wide", make(2, 1, 3, 6, 31, 4, 3, 3, 0, 1)},
    // Winograd F(4×4): rows of 4×4 tiles fill one vector (32 wide: above, with 11 rows and
    // padding 2, so the last row of tiles is three quarters inside) or several (64 wide, with
    // groups), one row of tiles (4 outputs high, no padding).
    {"3x3 64 wide, groups", make(2, 2, 5, 7, 64, 6, 3, 3, 1, 1)},
    {"3x3 pad 0, 4x32 outputs", make(1, 1, 2, 6, 34, 3, 3, 3, 0, 0)},
    // Narrower rows of 4×4 tiles lie side by side in the lanes, several images to a vector
    // (f32 on AVX2: 2, 4 and 8 images 16, 8 and 4 wide; "resnet stage" and "13 outputs" above
    // too), the last pack part empty.
    {"3x3 16 wide, 5 images", make(5, 1, 3, 16, 16, 4, 3, 3, 1, 1)},
    {"3x3 8 wide, groups, 7 images", make(7, 2, 2, 6, 8, 3, 3, 3, 1, 1)},
    {"3x3 4 wide, pad 0, 11 images", make(11, 1, 3, 6, 6, 5, 3, 3, 0, 0)},
    // Winograd with shared sums stages blocks of whole chunks of ~4 MB: at 128 channels in
    // f64, 32 images of 4×4, so 37 images make two blocks, the last chunk one image.
    {"3x3 4x4 images, 128 channels, 37 images", make(37, 1, 128, 4, 4, 128, 3, 3, 1, 1)},
};

TEST(Conv2dDirect, MatchesPlainLoopF64) {
  for (const auto& [name, g] : kShapes) {
    SCOPED_TRACE(name);
    check_against_reference<double>(g, 1e-12, 1e-12);
  }
}

TEST(Conv2dDirect, MatchesPlainLoopF32) {
  for (const auto& [name, g] : kShapes) {
    SCOPED_TRACE(name);
    check_against_reference<float>(g, 1e-5, 1e-4);
  }
}

// Each thread keeps its padded-image buffer, and writes the zero borders only when the layout
// changes: alternating layouts (same sizes, other padding or other phase planes) must not
// leave stale pixels where zeros belong.
TEST(Conv2dDirect, AlternatingLayoutsKeepTheirBorders) {
  const std::vector<DirectConv> shapes = {
      make(2, 1, 3, 9, 9, 4, 3, 3, 1, 1), make(2, 1, 3, 9, 9, 4, 3, 3, 2, 2),
      make(2, 1, 3, 9, 9, 4, 2, 2, 1, 1, 1, 1, 3, 3),
      make(2, 1, 3, 9, 9, 4, 2, 2, 1, 1, 2, 2, 3, 3), make(3, 1, 3, 9, 9, 4, 3, 3, 1, 1)};
  for (int round = 0; round < 2; ++round)
    for (const DirectConv& g : shapes) {
      SCOPED_TRACE(shape_str(x_shape(g)) + " pad " + std::to_string(g.pH) + " dilation " +
                   std::to_string(g.dH));
      const Tensor x = grad_input(x_shape(g), -1, 1, 7 + round).detach();
      const Tensor w = grad_input(w_shape(g), -1, 1, 2).detach();
      const Tensor gy = grad_input(y_shape(g), -1, 1, 4).detach();
      for (DirectForward kind : kForwardKinds) {
        if (!runs(g, kind)) continue;
        EXPECT_TRUE(all_close(run_forward<double>(g, x, w, Tensor(), kind),
                              reference_forward(g, x, w, Tensor()), 1e-12, 1e-12));
      }
      for (DirectBackwardWeight kind : kWeightKinds) {
        if (!runs(g, kind)) continue;
        EXPECT_TRUE(all_close(run_backward_weight<double>(g, gy, x, kind),
                              reference_backward_weight(g, gy, x), 1e-12, 1e-12));
      }
    }
}

// Images are claimed by the threads in any order, but each is computed alone: bit-identical
// forward results for any thread count. Backward-weight over padded images sums per-thread
// parts of the batch (as the im2col kernel does): equal up to rounding; over gathered rows
// threads split the taps, each weight one sum over the batch: bit-identical; by Winograd
// either in up to 8 parts of the batch whatever the thread count, or each position's sums in
// one thread: bit-identical. Backward-data by phases computes each image alone: bit-identical.
// 16×16 images: Winograd's rows of tiles fill whole vectors (AVX2), one image a chunk, so the
// 5 images make 5 parts. F(4×4) takes images 32 wide, each one alone, and 8 wide in packs.
TEST(Conv2dDirect, SameResultForAnyThreadCount) {
  const DirectConv g = make(5, 1, 8, 16, 16, 3, 3, 3, 1, 1);
  const DirectConv g4 = make(5, 1, 8, 8, 32, 3, 3, 3, 1, 1);
  const DirectConv p4 = make(9, 1, 8, 8, 8, 3, 3, 3, 1, 1);  // packs of 2 (f64), chunks of 4
  const DirectConv s = make(5, 1, 8, 9, 9, 6, 3, 3, 1, 1, 1, 1, 2, 2);
  const Tensor x = grad_input(x_shape(g)).detach(), w = grad_input(w_shape(g), -1, 1, 2).detach();
  const Tensor gy = grad_input(y_shape(g), -1, 1, 4).detach();
  const Tensor ws = grad_input(w_shape(s), -1, 1, 5).detach();
  const Tensor gys = grad_input(y_shape(s), -1, 1, 6).detach();
  const Tensor x4 = grad_input(x_shape(g4), -1, 1, 7).detach();
  const Tensor w4 = grad_input(w_shape(g4), -1, 1, 8).detach();
  const Tensor xp = grad_input(x_shape(p4), -1, 1, 9).detach();
  const Tensor gyp = grad_input(y_shape(p4), -1, 1, 10).detach();
  const int threads = num_threads();
  set_num_threads(1);
  const Tensor y1 = run_forward<double>(g, x, w, Tensor(), DirectForward::by_outputs);
  const Tensor c1 = run_forward<double>(g, x, w, Tensor(), DirectForward::by_channels);
  const Tensor v1 = run_forward<double>(g, x, w, Tensor(), DirectForward::winograd);
  const Tensor f1 = run_forward<double>(g4, x4, w4, Tensor(), DirectForward::winograd_4x4);
  const Tensor p1 = run_forward<double>(p4, xp, w4, Tensor(), DirectForward::winograd_4x4);
  const Tensor q1 = run_backward_weight<double>(p4, gyp, xp, DirectBackwardWeight::winograd_4x4);
  const Tensor e1 =
      run_backward_weight<double>(p4, gyp, xp, DirectBackwardWeight::winograd_4x4_shared_sums);
  const Tensor gw1 = run_backward_weight<double>(g, gy, x, DirectBackwardWeight::padded_images);
  const Tensor r1 = run_backward_weight<double>(g, gy, x, DirectBackwardWeight::gathered_rows);
  const Tensor u1 = run_backward_weight<double>(g, gy, x, DirectBackwardWeight::winograd);
  const Tensor h1 =
      run_backward_weight<double>(g, gy, x, DirectBackwardWeight::winograd_shared_sums);
  const Tensor gx1 = run_backward_data<double>(s, gys, ws);
  set_num_threads(3);
  const Tensor y3 = run_forward<double>(g, x, w, Tensor(), DirectForward::by_outputs);
  const Tensor c3 = run_forward<double>(g, x, w, Tensor(), DirectForward::by_channels);
  const Tensor v3 = run_forward<double>(g, x, w, Tensor(), DirectForward::winograd);
  const Tensor f3 = run_forward<double>(g4, x4, w4, Tensor(), DirectForward::winograd_4x4);
  const Tensor p3 = run_forward<double>(p4, xp, w4, Tensor(), DirectForward::winograd_4x4);
  const Tensor q3 = run_backward_weight<double>(p4, gyp, xp, DirectBackwardWeight::winograd_4x4);
  const Tensor e3 =
      run_backward_weight<double>(p4, gyp, xp, DirectBackwardWeight::winograd_4x4_shared_sums);
  const Tensor gw3 = run_backward_weight<double>(g, gy, x, DirectBackwardWeight::padded_images);
  const Tensor r3 = run_backward_weight<double>(g, gy, x, DirectBackwardWeight::gathered_rows);
  const Tensor u3 = run_backward_weight<double>(g, gy, x, DirectBackwardWeight::winograd);
  const Tensor h3 =
      run_backward_weight<double>(g, gy, x, DirectBackwardWeight::winograd_shared_sums);
  const Tensor gx3 = run_backward_data<double>(s, gys, ws);
  set_num_threads(threads);
  EXPECT_TRUE(all_close(y3, y1, 0, 0));
  EXPECT_TRUE(all_close(c3, c1, 0, 0));
  EXPECT_TRUE(all_close(v3, v1, 0, 0));
  EXPECT_TRUE(all_close(f3, f1, 0, 0));
  EXPECT_TRUE(all_close(p3, p1, 0, 0));
  EXPECT_TRUE(all_close(q3, q1, 0, 0));  // F(4x4): 3 chunks, in parts whatever the threads
  EXPECT_TRUE(all_close(e3, e1, 0, 0));
  EXPECT_TRUE(all_close(gw3, gw1, 1e-12, 1e-12));
  EXPECT_TRUE(all_close(r3, r1, 0, 0));
  EXPECT_TRUE(all_close(u3, u1, 0, 0));
  EXPECT_TRUE(all_close(h3, h1, 0, 0));  // each position's sums in one thread, in batch order
  EXPECT_TRUE(all_close(gx3, gx1, 0, 0));
}

// F(4×4) on widths that are not a multiple of 4: each row's last tile reaches past Wo, and
// those outputs are dropped, not stored over the next row, channel or image (the plain-loop
// tests would not see a store past the last image's end, nor one later overwritten by the
// right value). 31 wide: rows of 8 tiles (one f32 vector); 15 and 7 wide: two and four images
// side by side in a vector.
TEST(Conv2dDirect, Winograd4StoresNothingPastTheOutputs) {
  for (const int64_t width : {31, 15, 7}) {
    SCOPED_TRACE("width " + std::to_string(width));
    const DirectConv g = make(3, 1, 4, 6, width, 5, 3, 3, 1, 1);
    ASSERT_TRUE(detail::winograd4_applies(g));
    std::vector<float> x(static_cast<std::size_t>(g.N * g.C * g.H * g.W));
    std::vector<float> w(static_cast<std::size_t>(g.O * g.C * 9)), b(static_cast<std::size_t>(g.O));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 5) * 0.25f - 0.5f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i);
    const auto outputs = static_cast<std::size_t>(g.N * g.O * g.Ho * g.Wo);
    constexpr float kSentinel = 12345.0f;
    std::vector<float> y(outputs + 16, kSentinel), expected(outputs);
    detail::direct_conv_forward<float>(g, x.data(), w.data(), b.data(), y.data(),
                                       DirectForward::winograd_4x4);
    detail::direct_conv_forward<float>(g, x.data(), w.data(), b.data(), expected.data(),
                                       DirectForward::by_outputs);
    for (std::size_t i = 0; i < outputs; ++i)
      ASSERT_NEAR(y[i], expected[i], 1e-4f * (1.0f + std::fabs(expected[i]))) << "output " << i;
    for (std::size_t i = outputs; i < y.size(); ++i) ASSERT_EQ(y[i], kSentinel) << "past the end";
  }
}

// The small images' row copy (whole vectors, the last overlapping the one before, or halves
// of them): exactly n values for every n up to three vectors, nothing written past them.
template <class T>
void expect_copy_row_copies_exactly_n() {
  constexpr T kUntouched(-1);
  for (int64_t n = 0; n <= 3 * detail::direct::Simd<T>::L; ++n) {
    SCOPED_TRACE("n " + std::to_string(n));
    std::vector<T> src(static_cast<std::size_t>(n) + 1), dst(static_cast<std::size_t>(n) + 16);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<T>(i + 1);
    std::fill(dst.begin(), dst.end(), kUntouched);
    detail::direct::copy_row(src.data(), n, dst.data());
    for (std::size_t i = 0; i < dst.size(); ++i)
      ASSERT_EQ(dst[i], i < static_cast<std::size_t>(n) ? src[i] : kUntouched) << "value " << i;
  }
}

TEST(Conv2dDirect, CopyRowCopiesExactlyN) {
  expect_copy_row_copies_exactly_n<float>();
  expect_copy_row_copies_exactly_n<double>();
}

// Through conv2d: on AVX-512 or AVX2 CPUs the CIFAR ResNet and airbench shapes take the direct
// kernels (forward by outputs, or on 7×7 and 4×4 images by channels; on AVX2 the 3×3 stride-1
// layers of 16 channels and more by Winograd; stride-1 backward-data as the flipped forward,
// strided 3×3 by phases on AVX2; F(4×4) Winograd where outputs are 32 or 8 wide, or 16 wide
// with 64 channels (and 31, 7 or 15 wide alike: airbench's sizes), forward and backward-data;
// backward-weight where it pays, by Winograd on
// AVX2 for 64 channels and more, F(4×4) on ResNet18's 64-channel 32×32 layer and with shared
// sums on 128 channels and more); the results are the plain loop's.
TEST(Conv2dDirect, ResNetShapesThroughConv2d) {
  for (const DirectConv& g :
       {make(2, 1, 16, 16, 16, 16, 3, 3, 1, 1), make(2, 1, 8, 8, 8, 8, 3, 3, 1, 1),
        make(2, 1, 8, 16, 16, 16, 3, 3, 1, 1, 1, 1, 2, 2),
        make(2, 1, 8, 16, 16, 16, 1, 1, 0, 0, 1, 1, 2, 2), make(3, 1, 16, 7, 7, 32, 3, 3, 1, 1),
        make(3, 1, 16, 4, 4, 32, 3, 3, 1, 1), make(2, 1, 64, 8, 8, 64, 3, 3, 1, 1),
        make(2, 1, 128, 4, 4, 128, 3, 3, 1, 1), make(2, 1, 16, 32, 32, 16, 3, 3, 1, 1),
        make(3, 1, 64, 16, 16, 64, 3, 3, 1, 1), make(1, 1, 64, 32, 32, 64, 3, 3, 1, 1),
        make(3, 1, 64, 15, 15, 64, 3, 3, 1, 1)}) {
    SCOPED_TRACE(shape_str(x_shape(g)) + " stride " + std::to_string(g.sH));
    Tensor x = grad_input(x_shape(g)), w = grad_input(w_shape(g), -1, 1, 2);
    const Tensor gy = grad_input(y_shape(g), -1, 1, 4).detach();
    Tensor y = conv2d(x, w, Tensor(), {g.sH, g.sW}, {g.pH, g.pW});
    y.backward(gy);
    EXPECT_TRUE(all_close(y, reference_forward(g, x.detach(), w.detach(), Tensor()), 1e-12, 1e-12));
    EXPECT_TRUE(all_close(w.grad(), reference_backward_weight(g, gy, x.detach()), 1e-12, 1e-12));
    EXPECT_TRUE(all_close(x.grad(), reference_backward_data(g, gy, w.detach()), 1e-12, 1e-12));
  }
}

}  // namespace
}  // namespace rg
