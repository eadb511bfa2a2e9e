// CPU kernels of conv2d: im2col + Eigen GEMM, parallel over the batch; most convolutions of
// CIFAR nets run on the direct kernels of conv2d_direct.h instead (no column matrix: 1.5–2x
// faster on the CIFAR ResNet layers; direct_conv_pays says which). These im2col kernels are
// their reference too.
//
// Performance choices (measured on 2 AVX-512 cores, CIFAR ResNet18 shapes, batch 128):
// - Threads split the BATCH, each running single-threaded GEMMs on its own images with its own
//   scratch: ≈ 190 GFLOP/s vs ≈ 90 when each per-image GEMM is threaded (small spatial sizes
//   leave too little work per GEMM to share).
// - Small images (8×8, 4×4) make thin GEMMs (Ho·Wo = 64 or 16 columns) that Eigen runs far
//   below peak, so several images are laid side by side in one wide column matrix
//   (kMinGemmCols columns at least) and share one GEMM.
// - Forward and backward-data hand out batches of images dynamically (a core busy with something
//   else does not hold up the other); each image's result does not depend on the split.
//   Backward-weight gives each thread a fixed part of the batch and one partial gW, summed in a
//   fixed order, so its result does not depend on thread timing either.
// - 1x1 stride-1 unpadded convolutions use the image itself as the column matrix.
// - Stride-1 backward-data is the forward kernel on gy with the flipped, transposed weight
//   (see conv2d_backward_data): deep GEMMs and no col2im. Strided backward-data has a direct
//   kernel of its own (by phases of gx); the GEMM + col2im here serves where it does not pay.
//
// Eigen runs its GEMMs single-threaded here: the build has no OpenMP, and this define makes
// sure a later -fopenmp cannot make every worker thread spawn its own team.
//
// GCC 12 reports a false -Wmaybe-uninitialized inside Eigen 3.4's AVX-512 f64 GEMM packing
// (the PacketBlock transpose of gemm_pack_lhs); the warning is silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#ifndef EIGEN_DONT_PARALLELIZE
#define EIGEN_DONT_PARALLELIZE
#endif

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "core/dispatch.h"
#include "core/kernel_log.h"
#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_direct.h"
#include "ops/conv/conv2d/conv2d_grouped.h"
#include "ops/conv/conv2d/conv2d_kernel.h"
#include "ops/conv/conv2d/conv2d_tiles.h"
#include "ops/conv/conv2d/im2col.h"
#include "ops/conv/conv_eigen.h"
#include "ops/conv/conv_params.h"
#include "ops/elementwise/elementwise.h"

namespace rg {
namespace {

using namespace detail::conv_eigen;

// Narrow GEMMs run far below peak; below this many columns, images are batched into one GEMM.
constexpr int64_t kMinGemmCols = 256;
// Stride-1 backward-data runs as a forward convolution with C/G output rows per GEMM; with
// fewer (the 3-channel stem) Wᵀ·gy + col2im is faster (measured: 45 vs 14 GFLOP/s on the stem)
// unless the direct kernel runs it.
constexpr int64_t kMinFlipChannels = 32;
// ...but one thread's column matrix stays below this many elements (16 MiB of f32).
constexpr int64_t kMaxColElements = int64_t{4} << 20;

// Everything the three kernels need about one convolution.
struct Geometry {
  int64_t N, C, H, W;  // x
  int64_t O, G;        // output channels, groups
  int64_t Cg, Og;      // channels per group
  int64_t K;           // Cg·kH·kW: rows of one group's column matrix
  int64_t P;           // Ho·Wo: columns of one image's column matrix
  int64_t B;           // images per GEMM
  Im2colGeometry im;   // one group of one image

  Geometry(const Shape& x, const Shape& w, int64_t Ho, int64_t Wo, const Conv2dParams& p) {
    N = x[0], C = x[1], H = x[2], W = x[3];
    O = w[0], G = p.groups, Cg = C / G, Og = O / G;
    im = {.channels = Cg, .height = H, .width = W, .kernel_h = w[2], .kernel_w = w[3]};
    im.stride_h = p.stride[0], im.stride_w = p.stride[1];
    im.pad_h = p.padding[0], im.pad_w = p.padding[1];
    im.dilation_h = p.dilation[0], im.dilation_w = p.dilation[1];
    im.out_h = Ho, im.out_w = Wo;
    K = im.rows(), P = im.cols();
    B = std::max<int64_t>(1, (kMinGemmCols + P - 1) / P);
    B = std::max<int64_t>(1, std::min(B, kMaxColElements / std::max<int64_t>(1, K * P)));
  }
  // The column matrix of one (image, group) is the image itself: no im2col needed.
  bool direct(int64_t images) const { return images == 1 && im.is_identity(); }
  int64_t x_image() const { return C * H * W; }
  int64_t y_image() const { return O * P; }
};

int64_t thread_parts(int64_t n) {
  return std::max<int64_t>(1, std::min<int64_t>(num_threads(), n));
}

// Images per GEMM for a batch of N split over the threads: g.B, but leaving every thread work.
int64_t images_per_gemm(const Geometry& g) {
  return std::max<int64_t>(1, std::min(g.B, (g.N + num_threads() - 1) / num_threads()));
}

// Runs body(n0, b, scratch) over batches of b <= B images, claimed dynamically by the threads
// (one busy core does not hold up the others: every image's result is independent of the
// split). make_scratch() runs once per thread.
template <class MakeScratch, class Body>
void for_each_image_batch(int64_t N, int64_t B, MakeScratch&& make_scratch, Body&& body) {
  parallel_claim((N + B - 1) / B, make_scratch, [&](int64_t it, auto& scratch) {
    body(it * B, std::min(B, N - it * B), scratch);
  });
}

// Splits the batch into one contiguous part per thread; fn(part, n_begin, n_end). A fixed
// split, for backward-weight whose partial sums must not depend on thread timing.
template <class F>
void for_each_part(int64_t N, int64_t parts, F&& fn) {
  parallel_for(parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t part = b; part < e; ++part) fn(part, part * N / parts, (part + 1) * N / parts);
  });
}

// Columns of images n0..n0+b of group g side by side: col (K, b·P). Returns the matrix to use
// (col itself, or x when the column matrix is the image).
template <class T>
const T* columns(const Geometry& g, const T* x, int64_t n0, int64_t b, int64_t grp, T* col) {
  if (g.direct(b)) return x + n0 * g.x_image() + grp * g.Cg * g.H * g.W;
  for (int64_t i = 0; i < b; ++i)
    im2col(x + (n0 + i) * g.x_image() + grp * g.Cg * g.H * g.W, g.im, col + i * g.P, b * g.P);
  return col;
}

// gy of images n0..n0+b, group g, as one (Og, b·P) matrix: a view when b == 1, else a copy.
template <class T>
const T* gather_gy(const Geometry& g, const T* gy, int64_t n0, int64_t b, int64_t grp, T* buf) {
  const T* first = gy + n0 * g.y_image() + grp * g.Og * g.P;
  if (b == 1) return first;
  for (int64_t o = 0; o < g.Og; ++o)
    for (int64_t i = 0; i < b; ++i)
      std::memcpy(buf + o * b * g.P + i * g.P, first + i * g.y_image() + o * g.P,
                  static_cast<std::size_t>(g.P) * sizeof(T));
  return buf;
}

template <class T>
struct ColScratch {
  Scratch<T> col, tmp;  // column matrix (K, B·P); gy or y of B images as one (Og, B·P) matrix
};

template <class T>
ColScratch<T> make_col_scratch(const Geometry& g, int64_t B) {
  return {Scratch<T>(g.direct(B) ? 0 : g.K * B * g.P), Scratch<T>(B > 1 ? g.Og * B * g.P : 0)};
}

template <class T>
void forward(const Geometry& g, const T* x, const T* w, const T* bias, T* y) {
  const int64_t B = images_per_gemm(g);
  auto body = [&](int64_t n0, int64_t b, ColScratch<T>& s) {
    for (int64_t grp = 0; grp < g.G; ++grp) {
      const T* c = columns(g, x, n0, b, grp, s.col.get());
      auto Wg = cmat(w + grp * g.Og * g.K, g.Og, g.K, g.K);
      auto Col = cmat(c, g.K, b * g.P, b * g.P);
      T* y0 = y + n0 * g.y_image() + grp * g.Og * g.P;
      if (b == 1) {
        mat(y0, g.Og, g.P, g.P).noalias() = Wg * Col;
        continue;
      }
      mat(s.tmp.get(), g.Og, b * g.P, b * g.P).noalias() = Wg * Col;
      for (int64_t o = 0; o < g.Og; ++o)
        for (int64_t i = 0; i < b; ++i)
          std::memcpy(y0 + i * g.y_image() + o * g.P, s.tmp.get() + o * b * g.P + i * g.P,
                      static_cast<std::size_t>(g.P) * sizeof(T));
    }
    if (!bias) return;
    for (int64_t i = 0; i < b; ++i)
      for (int64_t o = 0; o < g.O; ++o) {
        T* row = y + (n0 + i) * g.y_image() + o * g.P;
        const T v = bias[o];
        for (int64_t p = 0; p < g.P; ++p) row[p] += v;
      }
  };
  for_each_image_batch(
      g.N, B, [&] { return make_col_scratch<T>(g, B); }, body);
}

template <class T>
void backward_data(const Geometry& g, const T* gy, const T* w, T* gx) {
  const int64_t B = images_per_gemm(g);
  auto body = [&](int64_t n0, int64_t b, ColScratch<T>& s) {
    for (int64_t grp = 0; grp < g.G; ++grp) {
      auto Wg = cmat(w + grp * g.Og * g.K, g.Og, g.K, g.K);
      auto Gy = cmat(gather_gy(g, gy, n0, b, grp, s.tmp.get()), g.Og, b * g.P, b * g.P);
      T* gx0 = gx + n0 * g.x_image() + grp * g.Cg * g.H * g.W;
      if (g.direct(b)) {  // the column matrix is the image: write gx directly
        mat(gx0, g.K, g.P, g.P).noalias() = Wg.transpose() * Gy;
        continue;
      }
      mat(s.col.get(), g.K, b * g.P, b * g.P).noalias() = Wg.transpose() * Gy;
      for (int64_t i = 0; i < b; ++i) {
        // Zeroed here, just before col2im accumulates into it, while it is in cache.
        T* img = gx0 + i * g.x_image();
        std::fill(img, img + g.Cg * g.H * g.W, T(0));
        col2im(s.col.get() + i * g.P, b * g.P, g.im, img);
      }
    }
  };
  for_each_image_batch(
      g.N, B, [&] { return make_col_scratch<T>(g, B); }, body);
}

template <class T>
void backward_weight(const Geometry& g, const T* gy, const T* x, T* gw) {
  const int64_t parts = thread_parts(g.N), size = g.O * g.K, B = images_per_gemm(g);
  // Part 0 accumulates into gw itself, part k > 0 into partial k − 1.
  Scratch<T> partials((parts - 1) * size);
  for_each_part(g.N, parts, [&](int64_t part, int64_t lo, int64_t hi) {
    T* acc = part == 0 ? gw : partials.get() + (part - 1) * size;
    std::fill(acc, acc + size, T(0));
    ColScratch<T> s = make_col_scratch<T>(g, B);
    for (int64_t n0 = lo; n0 < hi; n0 += B) {
      const int64_t b = std::min(B, hi - n0);
      for (int64_t grp = 0; grp < g.G; ++grp) {
        auto Col = cmat(columns(g, x, n0, b, grp, s.col.get()), g.K, b * g.P, b * g.P);
        auto Gy = cmat(gather_gy(g, gy, n0, b, grp, s.tmp.get()), g.Og, b * g.P, b * g.P);
        mat(acc + grp * g.Og * g.K, g.Og, g.K, g.K).noalias() += Gy * Col.transpose();
      }
    }
  });
  if (parts == 1) return;
  // Fixed summation order (part 0, 1, 2, ...): deterministic whatever the thread timing.
  parallel_for(size, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t k = 0; k + 1 < parts; ++k) {
      const T* p = partials.get() + k * size;
      for (int64_t i = b; i < e; ++i) gw[i] += p[i];
    }
  });
}

// wf[g·Cg + c, o, i, j] = w[g·Og + o, c, kH − 1 − i, kW − 1 − j]: w: (O, Cg, kH, kW) ->
// wf: (C, Og, kH, kW), the weight of the stride-1 convolution that computes backward-data.
template <class T>
void flip_transpose(const T* w, int64_t G, int64_t Og, int64_t Cg, int64_t kk, T* wf) {
  parallel_for(G * Og, std::max<int64_t>(1, 4096 / (Cg * kk)), [&](int64_t lo, int64_t hi) {
    for (int64_t go = lo; go < hi; ++go) {
      const int64_t grp = go / Og, o = go % Og;
      for (int64_t c = 0; c < Cg; ++c) {
        const T* src = w + (go * Cg + c) * kk;
        T* dst = wf + ((grp * Cg + c) * Og + o) * kk;
        for (int64_t t = 0; t < kk; ++t) dst[t] = src[kk - 1 - t];
      }
    }
  });
}

template <class T>
void backward_bias(const T* gy, int64_t N, int64_t O, int64_t P, T* gb) {
  parallel_for(O, 1, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      double acc = 0;  // N·Ho·Wo terms: accumulate the per-image sums in f64
      for (int64_t n = 0; n < N; ++n) {
        const T* row = gy + (n * O + o) * P;
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          acc += static_cast<double>(cmat(row, 1, P, P).sum());
        } else {  // f16 / bf16: read each value exactly, no Eigen type for them
          for (int64_t i = 0; i < P; ++i) acc += convert<double>(row[i]);
        }
      }
      gb[o] = convert<T>(acc);  // one rounding, also for 16 bits
    }
  });
}

// The direct kernels' description of a convolution.
detail::DirectConv describe(const Shape& x, const Shape& w, const Shape& y, const Conv2dParams& p) {
  return {.N = x[0],
          .G = p.groups,
          .C = x[1] / p.groups,
          .H = x[2],
          .W = x[3],
          .O = w[0] / p.groups,
          .kH = w[2],
          .kW = w[3],
          .pH = p.padding[0],
          .pW = p.padding[1],
          .dH = p.dilation[0],
          .dW = p.dilation[1],
          .sH = p.stride[0],
          .sW = p.stride[1],
          .Ho = y[2],
          .Wo = y[3]};
}

// ... when the direct kernels are expected to pay.
std::optional<detail::DirectConv> direct_conv(const Shape& x, const Shape& w, const Shape& y,
                                              const Conv2dParams& p, detail::DirectKernel kernel) {
  const detail::DirectConv d = describe(x, w, y, p);
  return detail::direct_conv_pays(d, kernel) ? std::optional(d) : std::nullopt;
}

// ... when it has groups of few channels where their kernels pay (conv2d_grouped.h).
std::optional<detail::DirectConv> grouped_conv(const Shape& x, const Shape& w, const Shape& y,
                                               const Conv2dParams& p, detail::DirectKernel kernel) {
  const detail::DirectConv d = describe(x, w, y, p);
  return detail::grouped_direct_pays(d, kernel) ? std::optional(d) : std::nullopt;
}
constexpr std::string_view kGroupedDirect = "grouped direct";

void check_kernel_inputs(std::string_view op, const std::vector<Tensor>& tensors) {
  check_same_float(op, tensors);
}

// bf16 convolutions run on the CPU's bf16 dot products where it has them (AMX tiles or
// AVX512-BF16: conv2d_tiles.h, groups of 1). Otherwise — and always for f16 — they run the
// f32 kernels on f32 copies of the operands (exact: every 16-bit value is an f32). Either way
// every product is exact and every sum f32, as cuDNN's mixed precision, and the result is
// rounded once to 16 bits (to nearest even).
bool is_half(DType d) {
  return d == DType::f16 || d == DType::bf16;
}
Tensor widen(const Tensor& t) {
  return t.defined() ? t.detach().to(DType::f32) : t;
}

// Whether the f32 kernels run x ⋆ w as Winograd F(4×4, 3×3) both forward and backward-weight, on
// planes its 4×4 output tiles cover exactly: 4 times fewer multiplications than a direct
// convolution, more than the 2 of bf16's dot products. (Where the tiles waste some of the plane,
// as on airbench94's 15×15 and 7×7, f32 won by at most 7 % or lost, and its f32 output doubles
// the memory traffic of the pooling and BatchNorm after it: measured slower over the step.)
bool winograd_4x4_pays(const Shape& x, const Shape& w, const Conv2dParams& p) {
  const Shape y = conv_output_shape<2>("conv2d", x, w, p);
  const auto forward = direct_conv(x, w, y, p, detail::DirectKernel::forward);
  const auto weight = direct_conv(x, w, y, p, detail::DirectKernel::backward_weight);
  if (!forward || detail::direct_forward_kind(*forward) != detail::DirectForward::winograd_4x4 ||
      !weight)
    return false;
  const auto kind = detail::direct_backward_weight_kind(*weight);
  if (kind != detail::DirectBackwardWeight::winograd_4x4 &&
      kind != detail::DirectBackwardWeight::winograd_4x4_shared_sums)
    return false;
  return y[2] % 4 == 0 && y[3] % 4 == 0;
}

std::string_view forward_kind_name(detail::DirectForward kind) {
  switch (kind) {
    case detail::DirectForward::by_outputs:
      return "direct by outputs";
    case detail::DirectForward::by_channels:
      return "direct by channels";
    case detail::DirectForward::winograd:
      return "winograd F(2x2,3x3)";
    case detail::DirectForward::winograd_4x4:
      return "winograd F(4x4,3x3)";
  }
  return "?";
}

std::string_view weight_kind_name(detail::DirectBackwardWeight kind) {
  switch (kind) {
    case detail::DirectBackwardWeight::padded_images:
      return "direct padded images";
    case detail::DirectBackwardWeight::gathered_rows:
      return "direct gathered rows";
    case detail::DirectBackwardWeight::winograd:
      return "winograd F(2x2,3x3)";
    case detail::DirectBackwardWeight::winograd_shared_sums:
      return "winograd F(2x2,3x3) shared sums";
    case detail::DirectBackwardWeight::winograd_4x4:
      return "winograd F(4x4,3x3)";
    case detail::DirectBackwardWeight::winograd_4x4_shared_sums:
      return "winograd F(4x4,3x3) shared sums";
  }
  return "?";
}

}  // namespace

// The rule for AVX512-BF16 without AMX (Zen 4/5), measured per ResNet18 and airbench94 layer
// (README.md): the tiles everywhere but the strided 3×3 backward-data, whose tile form inserts
// zeros between gy's pixels (3/4 of its products are 0 at stride 2), where the f32 kernels work
// by phases; and under autocast, f32 for the layers where f32 Winograd F(4×4) pays. AMX: the
// tiles everywhere (issue 41's measurements). Without either: the f32 kernels, widened.
bool conv2d_tiles_run(const Shape& w, const Conv2dParams& p, ConvPass pass) {
  detail::tiles::TileIsa isa;
  if (p.groups != 1 || !detail::tiles::tile_isa_available(isa)) return false;
  switch (bf16_conv_kernels()) {
    case Bf16ConvKernels::tiles:
      return true;
    case Bf16ConvKernels::widened:
      return false;
    case Bf16ConvKernels::by_rule:
      break;
  }
  if (isa == detail::tiles::TileIsa::amx) return true;
  const bool strided = p.stride[0] > 1 || p.stride[1] > 1;
  return !(pass == ConvPass::backward_data && strided && w[2] == 3 && w[3] == 3);
}

bool conv2d_bf16_autocast_keeps_f32(const Shape& x, const Shape& w, const Conv2dParams& p) {
  if (bf16_conv_kernels() != Bf16ConvKernels::by_rule) return false;
  detail::tiles::TileIsa isa;
  if (p.groups != 1 || !detail::tiles::tile_isa_available(isa)) return true;  // all widened
  return isa == detail::tiles::TileIsa::avx512_bf16 && winograd_4x4_pays(x, w, p);
}

Tensor conv2d_forward(OnCpu, const Tensor& x_in, const Tensor& w_in, const Tensor& b_in,
                      const Conv2dParams& p) {
  check_kernel_inputs("conv2d", {x_in, w_in, b_in});
  const Shape y_shape = conv_output_shape<2>("conv2d", x_in.shape(), w_in.shape(), p);
  RG_CHECK(!b_in.defined() || b_in.shape() == Shape{y_shape[1]}, "conv2d: bias must be (",
           y_shape[1], ") for weight ", w_in.describe(), ", got ", b_in.describe());
  if (auto y = conv2d_forward_tiles(x_in, w_in, b_in, p)) return *y;
  if (is_half(x_in.dtype()))
    return conv2d_forward(OnCpu{}, widen(x_in), widen(w_in), widen(b_in), p).to(x_in.dtype());
  const Tensor x = x_in.contiguous(), w = w_in.contiguous();
  const Tensor bias = b_in.defined() ? b_in.contiguous() : Tensor();
  Tensor y = empty(y_shape, {x.dtype(), x.device()});
  if (auto d = grouped_conv(x.shape(), w.shape(), y_shape, p, detail::DirectKernel::forward)) {
    note_kernel("conv2d", conv2d_problem(x.shape(), w.shape(), p, x.dtype()), kGroupedDirect);
    dispatch_f32_f64(x.dtype(), "conv2d", [&](auto tag) {
      using T = decltype(tag);
      detail::grouped_forward<T>(*d, x.data<T>(), w.data<T>(),
                                 bias.defined() ? bias.data<T>() : nullptr, y.data<T>());
    });
    return y;
  }
  if (auto d = direct_conv(x.shape(), w.shape(), y_shape, p, detail::DirectKernel::forward)) {
    note_kernel("conv2d", conv2d_problem(x.shape(), w.shape(), p, x.dtype()),
                forward_kind_name(detail::direct_forward_kind(*d)));
    dispatch_f32_f64(x.dtype(), "conv2d", [&](auto tag) {
      using T = decltype(tag);
      detail::direct_conv_forward<T>(*d, x.data<T>(), w.data<T>(),
                                     bias.defined() ? bias.data<T>() : nullptr, y.data<T>(),
                                     detail::direct_forward_kind(*d));
    });
    return y;
  }
  const Geometry g(x.shape(), w.shape(), y_shape[2], y_shape[3], p);
  note_kernel("conv2d", conv2d_problem(x.shape(), w.shape(), p, x.dtype()), "im2col + gemm");
  dispatch_f32_f64(x.dtype(), "conv2d", [&](auto tag) {
    using T = decltype(tag);
    forward<T>(g, x.data<T>(), w.data<T>(), bias.defined() ? bias.data<T>() : nullptr, y.data<T>());
  });
  return y;
}

namespace {
// Checks gy: (N, O, Ho', Wo') against the full output shape y_shape: Ho' <= Ho, Wo' <= Wo.
void check_gy(std::string_view op, const Tensor& gy, const Shape& y_shape) {
  RG_CHECK(gy.dim() == 4 && gy.size(0) == y_shape[0] && gy.size(1) == y_shape[1] &&
               gy.size(2) >= 1 && gy.size(2) <= y_shape[2] && gy.size(3) >= 1 &&
               gy.size(3) <= y_shape[3],
           op, ": output gradient ", gy.describe(), " does not fit the output shape ",
           shape_str(y_shape));
}

}  // namespace

Tensor conv2d_backward_data(OnCpu, const Tensor& gy_in, const Tensor& w_in, const Shape& x_shape,
                            const Conv2dParams& p) {
  check_kernel_inputs("conv2d_backward_data", {gy_in, w_in});
  const Shape y_shape = conv_output_shape<2>("conv2d_backward_data", x_shape, w_in.shape(), p);
  check_gy("conv2d_backward_data", gy_in, y_shape);
  if (auto gx = conv2d_backward_data_tiles(gy_in, w_in, x_shape, p)) return *gx;
  if (is_half(gy_in.dtype()))
    return conv2d_backward_data(OnCpu{}, widen(gy_in), widen(w_in), x_shape, p).to(gy_in.dtype());
  const Tensor gy = gy_in.contiguous(), w = w_in.contiguous();
  if (auto d = grouped_conv(x_shape, w.shape(), y_shape, p, detail::DirectKernel::backward_data);
      d && gy.shape() == y_shape) {
    note_kernel("conv2d_backward_data", conv2d_problem(x_shape, w.shape(), p, gy.dtype()),
                kGroupedDirect);
    Tensor gx = empty(x_shape, {gy.dtype(), gy.device()});
    dispatch_f32_f64(gy.dtype(), "conv2d_backward_data", [&](auto tag) {
      using T = decltype(tag);
      detail::grouped_backward_data<T>(*d, gy.data<T>(), w.data<T>(), gx.data<T>());
    });
    return gx;
  }
  // Stride 1: gx is the convolution of gy (padded by d·(k − 1) − p) with the flipped,
  // transposed kernel. That GEMM has O·kH·kW deep inner products, where Wᵀ·gy has only O,
  // and needs no col2im; it is the forward kernel, at the forward's speed.
  const int64_t flip_ph = p.dilation[0] * (w.size(2) - 1) - p.padding[0];
  const int64_t flip_pw = p.dilation[1] * (w.size(3) - 1) - p.padding[1];
  const int64_t G = p.groups, Og = w.size(0) / G, Cg = w.size(1);
  const Conv2dParams flip_p{{1, 1}, {flip_ph, flip_pw}, p.dilation, G};
  if (p.stride == Conv2dPair{1, 1} && flip_ph >= 0 && flip_pw >= 0 && gy.shape() == y_shape &&
      (Cg >= kMinFlipChannels || direct_conv(y_shape, {Cg * G, Og, w.size(2), w.size(3)}, x_shape,
                                             flip_p, detail::DirectKernel::forward))) {
    Tensor wf = empty({Cg * G, Og, w.size(2), w.size(3)}, {w.dtype(), w.device()});
    dispatch_f32_f64(w.dtype(), "conv2d_backward_data", [&](auto tag) {
      using T = decltype(tag);
      flip_transpose<T>(w.data<T>(), G, Og, Cg, w.size(2) * w.size(3), wf.data<T>());
    });
    note_kernel("conv2d_backward_data", conv2d_problem(x_shape, w.shape(), p, gy.dtype()),
                "forward of the flipped kernel");
    return conv2d_forward(OnCpu{}, gy, wf, Tensor(), flip_p);
  }
  Tensor gx = empty(x_shape, {gy.dtype(), gy.device()});
  if (auto d = direct_conv(x_shape, w.shape(), y_shape, p, detail::DirectKernel::backward_data);
      d && gy.shape() == y_shape) {
    note_kernel("conv2d_backward_data", conv2d_problem(x_shape, w.shape(), p, gy.dtype()),
                "direct by phases");
    dispatch_f32_f64(gy.dtype(), "conv2d_backward_data", [&](auto tag) {
      using T = decltype(tag);
      detail::direct_conv_backward_data<T>(*d, gy.data<T>(), w.data<T>(), gx.data<T>());
    });
    return gx;
  }
  const Geometry g(x_shape, w.shape(), gy.size(2), gy.size(3), p);
  note_kernel("conv2d_backward_data", conv2d_problem(x_shape, w.shape(), p, gy.dtype()),
              "gemm + col2im");
  dispatch_f32_f64(gy.dtype(), "conv2d_backward_data", [&](auto tag) {
    using T = decltype(tag);
    backward_data<T>(g, gy.data<T>(), w.data<T>(), gx.data<T>());
  });
  return gx;
}

Tensor conv2d_backward_weight(OnCpu, const Tensor& gy_in, const Tensor& x_in,
                              const Shape& weight_shape, const Conv2dParams& p) {
  check_kernel_inputs("conv2d_backward_weight", {gy_in, x_in});
  const Shape y_shape =
      conv_output_shape<2>("conv2d_backward_weight", x_in.shape(), weight_shape, p);
  check_gy("conv2d_backward_weight", gy_in, y_shape);
  if (auto gw = conv2d_backward_weight_tiles(gy_in, x_in, weight_shape, p)) return *gw;
  if (is_half(gy_in.dtype()))
    return conv2d_backward_weight(OnCpu{}, widen(gy_in), widen(x_in), weight_shape, p)
        .to(gy_in.dtype());
  const Tensor gy = gy_in.contiguous(), x = x_in.contiguous();
  Tensor gw = empty(weight_shape, {gy.dtype(), gy.device()});
  if (auto d =
          grouped_conv(x.shape(), weight_shape, y_shape, p, detail::DirectKernel::backward_weight);
      d && gy.shape() == y_shape) {
    note_kernel("conv2d_backward_weight", conv2d_problem(x.shape(), weight_shape, p, x.dtype()),
                kGroupedDirect);
    dispatch_f32_f64(x.dtype(), "conv2d_backward_weight", [&](auto tag) {
      using T = decltype(tag);
      detail::grouped_backward_weight<T>(*d, gy.data<T>(), x.data<T>(), gw.data<T>());
    });
    return gw;
  }
  if (auto d =
          direct_conv(x.shape(), weight_shape, y_shape, p, detail::DirectKernel::backward_weight);
      d && gy.shape() == y_shape) {
    note_kernel("conv2d_backward_weight", conv2d_problem(x.shape(), weight_shape, p, x.dtype()),
                weight_kind_name(detail::direct_backward_weight_kind(*d)));
    dispatch_f32_f64(x.dtype(), "conv2d_backward_weight", [&](auto tag) {
      using T = decltype(tag);
      detail::direct_conv_backward_weight<T>(*d, gy.data<T>(), x.data<T>(), gw.data<T>(),
                                             detail::direct_backward_weight_kind(*d));
    });
    return gw;
  }
  const Geometry g(x.shape(), weight_shape, gy.size(2), gy.size(3), p);
  note_kernel("conv2d_backward_weight", conv2d_problem(x.shape(), weight_shape, p, x.dtype()),
              "im2col + gemm");
  dispatch_f32_f64(gy.dtype(), "conv2d_backward_weight", [&](auto tag) {
    using T = decltype(tag);
    backward_weight<T>(g, gy.data<T>(), x.data<T>(), gw.data<T>());
  });
  return gw;
}

Tensor conv2d_backward_bias(OnCpu, const Tensor& gy_in) {
  check_kernel_inputs("conv2d_backward_bias", {gy_in});
  RG_CHECK(gy_in.dim() == 4, "conv2d_backward_bias: expected a 4-D (N, O, Ho, Wo) gradient, got ",
           gy_in.describe());
  const Tensor gy = gy_in.contiguous();
  const int64_t N = gy.size(0), O = gy.size(1), P = gy.size(2) * gy.size(3);
  Tensor gb = empty({O}, {gy.dtype(), gy.device()});
  dispatch_floating(gy.dtype(), "conv2d_backward_bias", [&](auto tag) {
    using T = decltype(tag);
    backward_bias<T>(gy.data<T>(), N, O, P, gb.data<T>());
  });
  return gb;
}

}  // namespace rg
