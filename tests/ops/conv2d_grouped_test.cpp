// The kernels of grouped convolutions of few channels per group (ops/conv/conv2d/conv2d_grouped.h)
// against the plain loop, called directly and through conv2d (which routes such convolutions to
// them, forward and both gradients, and says so): depthwise and 2 to 32 channels per group,
// output channels in blocks of four and one by one; strides 1 to 3 on each axis (the phase
// planes, the zeros between gy's pixels), dilation, paddings 0 to beyond the kernel, 1×1 to 5×5
// kernels, widths under one vector, at one and between vectors (4, 8 and 16 lanes); the same
// bits at any thread count; a non-finite pixel that no output reads stays out of every result;
// gradcheck in f64. Depthwise shapes with outputs narrower than 8 take the kernels vectorised
// over channels (depthwise_by_lanes: 2 to 20 channels, one block of lanes partly empty), the
// wider ones and those of several outputs per group the planes' kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/kernel_log.h"
#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_grouped.h"
#include "ops/ops.h"
#include "tests/ops/conv2d_reference.h"
#include "tests/support/fixtures.h"
#include "tests/support/gradcheck.h"

namespace rg {
namespace {
using namespace rg::testing;

// make(N, G, C = 1, H, W, O = multiplier, kH, kW, pH, pW, dH, dW, sH, sW)
const std::vector<std::pair<const char*, DirectConv>> kShapes = {
    {"3x3 pad 1 (MobileNet)", make(2, 12, 1, 10, 9, 1, 3, 3, 1, 1)},
    {"3x3 stride 2", make(2, 12, 1, 16, 16, 1, 3, 3, 1, 1, 1, 1, 2, 2)},
    {"3x3 stride 2, odd size", make(3, 5, 1, 9, 7, 1, 3, 3, 1, 1, 1, 1, 2, 2)},
    {"5x5 pad 2 (EfficientNet)", make(2, 6, 1, 8, 8, 1, 5, 5, 2, 2)},
    {"5x5 stride 2", make(2, 6, 1, 15, 17, 1, 5, 5, 2, 2, 1, 1, 2, 2)},
    {"multiplier 3", make(2, 4, 1, 7, 11, 3, 3, 3, 1, 1)},
    {"multiplier 2, stride (1, 3)", make(2, 3, 1, 9, 13, 2, 3, 2, 1, 0, 1, 1, 1, 3)},
    {"dilation (2, 3)", make(2, 4, 1, 12, 14, 1, 3, 3, 2, 3, 2, 3)},
    {"pad 0", make(2, 4, 1, 6, 6, 1, 3, 3, 0, 0)},
    {"padding beyond the kernel", make(2, 3, 1, 4, 5, 1, 2, 3, 3, 4)},
    {"1x1", make(2, 5, 1, 6, 5, 1, 1, 1, 0, 0)},
    {"1x1 stride 2", make(2, 5, 1, 6, 7, 1, 1, 1, 0, 0, 1, 1, 2, 2)},
    {"one pixel", make(3, 4, 1, 1, 1, 1, 3, 3, 1, 1)},
    {"one row", make(2, 4, 1, 1, 20, 1, 1, 3, 0, 1)},
    {"32 wide (two AVX-512 vectors)", make(2, 3, 1, 6, 32, 1, 3, 3, 1, 1)},
    {"37 wide", make(1, 3, 1, 5, 37, 1, 3, 3, 1, 1)},
    {"stride (3, 2), dilation 2", make(2, 3, 1, 13, 12, 2, 3, 3, 2, 2, 2, 2, 3, 2)},
    {"20 channels by lanes (MobileNetV2 @4)", make(2, 20, 1, 4, 4, 1, 3, 3, 1, 1)},
    {"18 channels 5x5 by lanes, stride 2", make(2, 18, 1, 9, 8, 1, 5, 5, 2, 2, 1, 1, 2, 2)},
    {"4 channels a group (ResNeXt29_32x4d)", make(2, 3, 4, 9, 9, 4, 3, 3, 1, 1)},
    {"8 a group, stride 2 (RegNet)", make(2, 2, 8, 8, 8, 8, 3, 3, 1, 1, 1, 1, 2, 2)},
    {"3 in, 6 out a group (DPN)", make(2, 4, 3, 7, 10, 6, 3, 3, 1, 1)},
    {"32 a group, 4x4", make(2, 2, 32, 4, 4, 32, 3, 3, 1, 1)},
    {"5 in, 7 out, 2x2, dilation", make(1, 2, 5, 6, 19, 7, 2, 2, 1, 0, 2, 1)},
    {"2 a group, 5x5 stride 2, 16 wide", make(2, 3, 2, 16, 16, 3, 5, 5, 2, 2, 1, 1, 2, 2)},
};

template <class T>
Tensor run_forward(const DirectConv& g, const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor y = empty(y_shape(g), {x.dtype()});
  detail::grouped_forward<T>(g, x.data<T>(), w.data<T>(), b.defined() ? b.data<T>() : nullptr,
                             y.data<T>());
  return y;
}
template <class T>
Tensor run_backward_data(const DirectConv& g, const Tensor& gy, const Tensor& w) {
  Tensor gx = empty(x_shape(g), {gy.dtype()});
  detail::grouped_backward_data<T>(g, gy.data<T>(), w.data<T>(), gx.data<T>());
  return gx;
}
template <class T>
Tensor run_backward_weight(const DirectConv& g, const Tensor& gy, const Tensor& x) {
  Tensor gw = empty(w_shape(g), {x.dtype()});
  detail::grouped_backward_weight<T>(g, gy.data<T>(), x.data<T>(), gw.data<T>());
  return gw;
}

template <class T>
void check_against_reference(const DirectConv& g, double atol, double rtol) {
  const DType dt = std::is_same_v<T, float> ? DType::f32 : DType::f64;
  const Tensor x = grad_input(x_shape(g), -1, 1, 1).detach().to(dt);
  const Tensor w = grad_input(w_shape(g), -1, 1, 2).detach().to(dt);
  const Tensor b = grad_input({g.G * g.O}, -1, 1, 3).detach().to(dt);
  const Tensor gy = grad_input(y_shape(g), -1, 1, 4).detach().to(dt);
  const Tensor x64 = x.to(DType::f64), w64 = w.to(DType::f64), gy64 = gy.to(DType::f64);
  const Tensor xm = magnitude(x), wm = magnitude(w), gym = magnitude(gy);
  EXPECT_TRUE(close_to_reference<T>(run_forward<T>(g, x, w, b),
                                    reference_forward(g, x64, w64, b.to(DType::f64)),
                                    reference_forward(g, xm, wm, magnitude(b)), atol, rtol));
  EXPECT_TRUE(close_to_reference<T>(run_forward<T>(g, x, w, Tensor()),
                                    reference_forward(g, x64, w64, Tensor()),
                                    reference_forward(g, xm, wm, Tensor()), atol, rtol));
  EXPECT_TRUE(close_to_reference<T>(run_backward_data<T>(g, gy, w),
                                    reference_backward_data(g, gy64, w64),
                                    reference_backward_data(g, gym, wm), atol, rtol));
  EXPECT_TRUE(close_to_reference<T>(run_backward_weight<T>(g, gy, x),
                                    reference_backward_weight(g, gy64, x64),
                                    reference_backward_weight(g, gym, xm), atol, rtol));
}

TEST(Conv2dGrouped, MatchesPlainLoopF64) {
  for (const auto& [name, g] : kShapes) {
    SCOPED_TRACE(name);
    check_against_reference<double>(g, 1e-12, 1e-12);
  }
}

TEST(Conv2dGrouped, MatchesPlainLoopF32) {
  for (const auto& [name, g] : kShapes) {
    SCOPED_TRACE(name);
    check_against_reference<float>(g, 1e-6, 1e-5);
  }
}

// Whether conv2d's kernel log names the grouped kernels for the pass `op` of a convolution of
// input x.
bool ran_grouped(const char* op, const DirectConv& g) {
  for (const KernelChoice& k : kernel_choices())
    if (k.op == op && k.kernel == "grouped direct" &&
        k.problem.find(shape_str(x_shape(g)) + " ") != std::string::npos &&
        k.problem.find(shape_str(w_shape(g))) != std::string::npos)
      return true;
  return false;
}

// Through the op, forward and both gradients by autograd, whichever kernel runs them; the
// kernel log names these kernels for every pass of a depthwise convolution and of groups of 4
// channels on 16×16 outputs, for backward-weight alone with 8 channels, for none with 16 on
// 8×8 outputs (grouped_direct_pays); and bf16 runs them widened.
TEST(Conv2dGrouped, Conv2dRoutesGroupsOfFewChannelsHere) {
  std::vector<std::pair<const char*, DirectConv>> shapes = kShapes;
  const DirectConv four = make(2, 3, 4, 16, 16, 4, 3, 3, 1, 1);
  const DirectConv eight = make(2, 2, 8, 16, 18, 8, 3, 3, 1, 1);
  const DirectConv sixteen = make(2, 2, 16, 8, 8, 16, 3, 3, 1, 1);
  shapes.insert(shapes.end(), {{"4 a group @16", four}, {"8 @16", eight}, {"16 @8", sixteen}});
  for (const auto& [name, g] : shapes) {
    SCOPED_TRACE(name);
    Tensor x = grad_input(x_shape(g)), w = grad_input(w_shape(g), -1, 1, 2);
    const Tensor gy = grad_input(y_shape(g), -1, 1, 4).detach();
    Tensor y = conv2d(x, w, Tensor(), {g.sH, g.sW}, {g.pH, g.pW}, {g.dH, g.dW}, g.G);
    y.backward(gy);
    EXPECT_TRUE(all_close(y, reference_forward(g, x.detach(), w.detach(), Tensor()), 1e-12, 1e-12));
    EXPECT_TRUE(all_close(w.grad(), reference_backward_weight(g, gy, x.detach()), 1e-12, 1e-12));
    EXPECT_TRUE(all_close(x.grad(), reference_backward_data(g, gy, w.detach()), 1e-12, 1e-12));
    if (g.C != 1) continue;
    for (const char* op : {"conv2d", "conv2d_backward_data", "conv2d_backward_weight"})
      EXPECT_TRUE(ran_grouped(op, g)) << op;
  }
  for (const char* op : {"conv2d", "conv2d_backward_data", "conv2d_backward_weight"}) {
    SCOPED_TRACE(op);
    EXPECT_TRUE(ran_grouped(op, four));
    EXPECT_EQ(ran_grouped(op, eight), op == std::string("conv2d_backward_weight"));
    EXPECT_FALSE(ran_grouped(op, sixteen));
  }
  const DirectConv& g = kShapes[1].second;
  const Tensor x = grad_input(x_shape(g)).detach(), w = grad_input(w_shape(g), -1, 1, 2).detach();
  const Tensor y16 =
      conv2d(x.to(DType::bf16), w.to(DType::bf16), Tensor(), {2, 2}, {1, 1}, {1, 1}, g.G);
  const Tensor y32 = conv2d(x.to(DType::bf16).to(DType::f32), w.to(DType::bf16).to(DType::f32),
                            Tensor(), {2, 2}, {1, 1}, {1, 1}, g.G);
  EXPECT_EQ(y16.dtype(), DType::bf16);
  EXPECT_TRUE(all_close(y16, y32.to(DType::bf16), 0, 0));  // exact products, one rounding
}

void expect_same_result_for_any_thread_count(const DirectConv& g) {
  const Tensor x = grad_input(x_shape(g)).detach(), w = grad_input(w_shape(g), -1, 1, 2).detach();
  const Tensor gy = grad_input(y_shape(g), -1, 1, 4).detach();
  const Tensor x32 = x.to(DType::f32), w32 = w.to(DType::f32), gy32 = gy.to(DType::f32);
  const int threads = num_threads();
  std::vector<Tensor> one, three;
  for (auto* results : {&one, &three}) {
    set_num_threads(results == &one ? 1 : 3);
    *results = {run_forward<double>(g, x, w, Tensor()), run_backward_data<double>(g, gy, w),
                run_backward_weight<double>(g, gy, x),  run_forward<float>(g, x32, w32, Tensor()),
                run_backward_data<float>(g, gy32, w32), run_backward_weight<float>(g, gy32, x32)};
  }
  set_num_threads(threads);
  for (std::size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(all_close(three[i], one[i], 0, 0)) << i;
}

TEST(Conv2dGrouped, SameResultForAnyThreadCount) {
  for (const DirectConv& g : {make(3, 7, 1, 13, 19, 2, 3, 3, 1, 1, 1, 1, 2, 1),
                              make(2, 5, 6, 9, 16, 5, 3, 3, 1, 1, 1, 1, 2, 2),
                              make(3, 20, 1, 9, 9, 1, 3, 3, 1, 1, 1, 1, 2, 2)})  // by lanes
    expect_same_result_for_any_thread_count(g);
}

// Stride 2 over 3 × 7 pixels, 1×1: the outputs read rows 0, 2 and columns 0, 2, 4, 6, never
// columns 1, 3, 5. An inf
// there must not reach y or gw (through a vector lane past the last output, say, as 0 · inf).
TEST(Conv2dGrouped, APixelNoOutputReadsStaysOut) {
  const DirectConv g = make(1, 2, 1, 3, 7, 1, 1, 1, 0, 0, 1, 1, 2, 2);
  std::vector<float> xv(static_cast<std::size_t>(numel_of(x_shape(g))), 1.0f);
  for (std::size_t i = 0; i < xv.size(); ++i)
    if (i % 7 % 2 == 1) xv[i] = std::numeric_limits<float>::infinity();
  const Tensor x = from_vector(xv, x_shape(g), {DType::f32});
  const Tensor w = full(w_shape(g), 2.0, {DType::f32});
  const Tensor gy = full(y_shape(g), 1.0, {DType::f32});
  const Tensor y = run_forward<float>(g, x, w, Tensor());
  const Tensor gw = run_backward_weight<float>(g, gy, x);
  for (float v : y.to_vector<float>()) EXPECT_EQ(v, 2.0f);
  for (float v : gw.to_vector<float>()) EXPECT_EQ(v, 8.0f);  // 2 rows × 4 columns of ones
  // And gx has the weight at every read pixel, zero at the others, whatever w's other lanes.
  const std::vector<float> gx = run_backward_data<float>(g, gy, w).to_vector<float>();
  for (std::size_t i = 0; i < gx.size(); ++i) {
    const bool read = i / 7 % 3 % 2 == 0 && i % 7 % 2 == 0;  // even rows and columns
    EXPECT_EQ(gx[i], read ? 2.0f : 0.0f) << i;
  }
}

TEST(Conv2dGrouped, Gradcheck) {
  for (const DirectConv& g : {kShapes[2].second, kShapes[6].second, kShapes[16].second,
                              make(1, 2, 3, 5, 6, 5, 3, 3, 1, 1, 1, 1, 2, 1)}) {
    SCOPED_TRACE(shape_str(x_shape(g)));
    const Tensor b = grad_input({g.G * g.O}, -1, 1, 3);
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) {
          return conv2d(in[0], in[1], in[2], {g.sH, g.sW}, {g.pH, g.pW}, {g.dH, g.dW}, g.G);
        },
        {grad_input(x_shape(g)), grad_input(w_shape(g), -1, 1, 2), b}));
  }
}

}  // namespace
}  // namespace rg
