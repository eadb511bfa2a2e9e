// CPU kernels of conv3d: vol2col + Eigen GEMM (bf16 on a machine with AMX or AVX512-BF16:
// conv3d_tiles.cpp, tried first).
//
// Work is cut into tiles of (volume n, group g, slab of output depths [d0, d1)): one tile's
// column matrix (K rows × slab·Ho·Wo) stays below kMaxColElements, so a 32×160×160 volume with
// 32 channels (K = 864) never needs its whole 2.8 GB column matrix at once, and tiles are small
// enough that one volume (the 3-D UNet trains on batches of 1–2) still feeds every thread.
// - Forward: threads claim tiles dynamically, each with its own column scratch, running
//   single-threaded GEMMs (conv2d_cpu.cpp measured that splitting work beats threading inside
//   each GEMM); tiles write disjoint outputs, so the result does not depend on the split.
// - Backward-weight: each thread takes a fixed contiguous run of tiles and one partial gW,
//   summed in a fixed order: deterministic whatever the thread timing.
// - Backward-data, stride 1: the forward kernel on gy with the flipped, transposed weight
//   (O·kD·kH·kW-deep GEMMs, no col2vol). Otherwise Wᵀ·gy is split over the threads by columns
//   and col2vol by channels (channels scatter into disjoint parts of gx: no races).
// - A 1×1×1 stride-1 unpadded convolution uses the volume itself as its column matrix.
//
// Eigen runs its GEMMs single-threaded here (no OpenMP; the define makes sure of it).
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's false -Wmaybe-uninitialized inside Eigen 3.4's AVX-512 f64 GEMM packing.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#ifndef EIGEN_DONT_PARALLELIZE
#define EIGEN_DONT_PARALLELIZE
#endif

#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/conv/conv3d/conv3d_geometry.h"
#include "ops/conv/conv3d/conv3d_kernel.h"
#include "ops/conv/conv3d/conv3d_tiles.h"
#include "ops/conv/conv3d/vol2col.h"
#include "ops/conv/conv_eigen.h"
#include "ops/conv/conv_params.h"
#include "ops/elementwise/elementwise.h"

namespace rg {
namespace {

using namespace detail::conv_eigen;

using detail::conv3d::Geometry;

// Backward-data splits Wᵀ·gy into column chunks of at least this many columns per thread.
constexpr int64_t kMinChunkCols = 128;

// The column matrix of one tile (K, (d1 − d0)·plane) and its row stride: the scratch, filled
// by vol2col, or the volume itself.
template <class T>
ConstMatMap<T> columns(const Geometry& g, const T* x, const Geometry::Tile& t, T* scratch) {
  const int64_t cols = (t.d1 - t.d0) * g.plane;
  const T* xg = x + t.n * g.x_volume() + t.grp * g.x_group();
  if (g.identity()) return cmat(xg + t.d0 * g.plane, g.K, cols, g.P);
  vol2col(xg, g.v, t.d0, t.d1, 0, g.Cg, scratch, cols);
  return cmat<T>(scratch, g.K, cols, cols);
}

// Rows of group grp of volume n of a (N, O, Do, Ho, Wo) tensor, over the tile's depths.
template <class T>
MatMap<T> out_rows(const Geometry& g, T* y, const Geometry::Tile& t) {
  return mat(y + t.n * g.y_volume() + t.grp * g.Og * g.P + t.d0 * g.plane, g.Og,
             (t.d1 - t.d0) * g.plane, g.P);
}
template <class T>
ConstMatMap<T> out_rows(const Geometry& g, const T* gy, const Geometry::Tile& t) {
  return cmat(gy + t.n * g.y_volume() + t.grp * g.Og * g.P + t.d0 * g.plane, g.Og,
              (t.d1 - t.d0) * g.plane, g.P);
}

int64_t thread_parts(int64_t n) {
  return std::max<int64_t>(1, std::min<int64_t>(num_threads(), n));
}

template <class T>
void forward(const Geometry& g, const T* x, const T* w, const T* bias, T* y) {
  const int64_t tiles = g.tiles(), scratch = g.identity() ? 0 : g.K * g.slab * g.plane;
  parallel_claim(
      tiles, [&] { return Scratch<T>(scratch); },
      [&](int64_t k, Scratch<T>& col) {
        const Geometry::Tile t = g.tile(k);
        auto Y = out_rows(g, y, t);
        Y.noalias() = cmat(w + t.grp * g.Og * g.K, g.Og, g.K, g.K) * columns(g, x, t, col.get());
        if (bias)
          for (int64_t o = 0; o < g.Og; ++o) Y.row(o).array() += bias[t.grp * g.Og + o];
      });
}

template <class T>
void backward_weight(const Geometry& g, const T* gy, const T* x, T* gw) {
  const int64_t tiles = g.tiles(), parts = thread_parts(tiles), size = g.O * g.K;
  const int64_t scratch = g.identity() ? 0 : g.K * g.slab * g.plane;
  // Part 0 accumulates into gw itself, part k > 0 into partial k − 1.
  Scratch<T> partials((parts - 1) * size);
  parallel_for(parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t part = b; part < e; ++part) {
      T* acc = part == 0 ? gw : partials.get() + (part - 1) * size;
      std::fill(acc, acc + size, T(0));
      Scratch<T> col(scratch);
      for (int64_t k = part * tiles / parts; k < (part + 1) * tiles / parts; ++k) {
        const Geometry::Tile t = g.tile(k);
        mat(acc + t.grp * g.Og * g.K, g.Og, g.K, g.K).noalias() +=
            out_rows(g, gy, t) * columns(g, x, t, col.get()).transpose();
      }
    }
  });
  // Fixed summation order (part 0, 1, 2, ...): deterministic whatever the thread timing.
  for (int64_t k = 0; k + 1 < parts; ++k) {
    const T* p = partials.get() + k * size;
    for (int64_t i = 0; i < size; ++i) gw[i] += p[i];
  }
}

template <class T>
void backward_data(const Geometry& g, const T* gy, const T* w, T* gx) {
  std::fill(gx, gx + g.N * g.x_volume(), T(0));
  Scratch<T> col(g.K * g.slab * g.plane);
  for (int64_t k = 0; k < g.tiles(); ++k) {
    const Geometry::Tile t = g.tile(k);
    const int64_t cols = (t.d1 - t.d0) * g.plane;
    auto Wg = cmat(w + t.grp * g.Og * g.K, g.Og, g.K, g.K);
    auto Gy = out_rows(g, gy, t);
    const int64_t chunk = std::max(kMinChunkCols, (cols + num_threads() - 1) / num_threads());
    parallel_for(cols, chunk, [&](int64_t lo, int64_t hi) {
      mat(col.get() + lo, g.K, hi - lo, cols).noalias() =
          Wg.transpose() * Gy.middleCols(lo, hi - lo);
    });
    T* gxg = gx + t.n * g.x_volume() + t.grp * g.x_group();
    parallel_for(g.Cg, 1, [&](int64_t c0, int64_t c1) {
      col2vol(col.get(), cols, g.v, t.d0, t.d1, c0, c1, gxg);
    });
  }
}

// wf[g·Cg + c, o, taps reversed] = w[g·Og + o, c, taps]: w: (O, Cg, k...) -> wf: (C, Og, k...),
// the weight of the stride-1 convolution that computes backward-data.
template <class T>
void flip_transpose(const T* w, int64_t G, int64_t Og, int64_t Cg, int64_t kk, T* wf) {
  for (int64_t go = 0; go < G * Og; ++go) {
    const int64_t grp = go / Og, o = go % Og;
    for (int64_t c = 0; c < Cg; ++c) {
      const T* src = w + (go * Cg + c) * kk;
      T* dst = wf + ((grp * Cg + c) * Og + o) * kk;
      for (int64_t t = 0; t < kk; ++t) dst[t] = src[kk - 1 - t];
    }
  }
}

template <class T>
void backward_bias(const T* gy, int64_t N, int64_t O, int64_t P, T* gb) {
  parallel_for(O, 1, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      double acc = 0;  // N·Do·Ho·Wo terms: accumulate in f64
      for (int64_t n = 0; n < N; ++n) {
        const T* row = gy + (n * O + o) * P;
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          acc += static_cast<double>(cmat(row, 1, P, P).sum());
        } else {  // f16 / bf16: read each value exactly
          for (int64_t i = 0; i < P; ++i) acc += convert<double>(row[i]);
        }
      }
      gb[o] = convert<T>(acc);  // one rounding, also for 16 bits
    }
  });
}

// f16, and bf16 where conv3d_tiles.h does not take it, run the f32 kernels on exact f32 copies
// and round once (as conv2d does).
bool is_half(DType d) {
  return d == DType::f16 || d == DType::bf16;
}
Tensor widen(const Tensor& t) {
  return t.defined() ? t.detach().to(DType::f32) : t;
}

// Checks gy: (N, O, Do', Ho', Wo') against the full output shape: 1 <= each size <= the full.
void check_gy(std::string_view op, const Tensor& gy, const Shape& y_shape) {
  bool ok = gy.dim() == 5 && gy.size(0) == y_shape[0] && gy.size(1) == y_shape[1];
  for (int a = 2; ok && a < 5; ++a) ok = gy.size(a) >= 1 && gy.size(a) <= y_shape[a];
  RG_CHECK(ok, op, ": output gradient ", gy.describe(), " does not fit the output shape ",
           shape_str(y_shape));
}

Shape spatial(const Tensor& t) {
  return {t.size(2), t.size(3), t.size(4)};
}

}  // namespace

Tensor conv3d_forward(OnCpu, const Tensor& x_in, const Tensor& w_in, const Tensor& b_in,
                      const Conv3dParams& p) {
  check_same_float("conv3d", {x_in, w_in, b_in});
  const Shape y_shape = conv_output_shape<3>("conv3d", x_in.shape(), w_in.shape(), p);
  RG_CHECK(!b_in.defined() || b_in.shape() == Shape{y_shape[1]}, "conv3d: bias must be (",
           y_shape[1], ") for weight ", w_in.describe(), ", got ", b_in.describe());
  if (auto y = conv3d_forward_tiles(x_in, w_in, b_in, p)) return *y;  // bf16 on AMX/AVX512-BF16
  if (is_half(x_in.dtype()))
    return conv3d_forward(OnCpu{}, widen(x_in), widen(w_in), widen(b_in), p).to(x_in.dtype());
  const Tensor x = x_in.contiguous(), w = w_in.contiguous();
  const Tensor bias = b_in.defined() ? b_in.contiguous() : Tensor();
  Tensor y = empty(y_shape, {x.dtype(), x.device()});
  const Geometry g(x.shape(), w.shape(), {y_shape[2], y_shape[3], y_shape[4]}, p);
  dispatch_f32_f64(x.dtype(), "conv3d", [&](auto tag) {
    using T = decltype(tag);
    forward<T>(g, x.data<T>(), w.data<T>(), bias.defined() ? bias.data<T>() : nullptr, y.data<T>());
  });
  return y;
}

Tensor conv3d_backward_data(OnCpu, const Tensor& gy_in, const Tensor& w_in, const Shape& x_shape,
                            const Conv3dParams& p) {
  constexpr const char* op = "conv3d_backward_data";
  check_same_float(op, {gy_in, w_in});
  const Shape y_shape = conv_output_shape<3>(op, x_shape, w_in.shape(), p);
  check_gy(op, gy_in, y_shape);
  if (auto gx = conv3d_backward_data_tiles(gy_in, w_in, x_shape, p)) return *gx;
  if (is_half(gy_in.dtype()))
    return conv3d_backward_data(OnCpu{}, widen(gy_in), widen(w_in), x_shape, p).to(gy_in.dtype());
  const Tensor gy = gy_in.contiguous(), w = w_in.contiguous();
  // Stride 1: gx is the convolution of gy (padded by d·(k − 1) − p) with the flipped,
  // transposed kernel: the forward kernel, with O·kD·kH·kW-deep GEMMs and no col2vol.
  const int64_t G = p.groups, Og = w.size(0) / G, Cg = w.size(1);
  Conv3dParams flip_p{{1, 1, 1}, {0, 0, 0}, p.dilation, G};
  bool flip = p.stride == Conv3dTriple{1, 1, 1} && gy.shape() == y_shape;
  for (int a = 0; a < 3; ++a) {
    flip_p.padding[a] = p.dilation[a] * (w.size(2 + a) - 1) - p.padding[a];
    flip = flip && flip_p.padding[a] >= 0;
  }
  if (flip) {
    Tensor wf = empty({Cg * G, Og, w.size(2), w.size(3), w.size(4)}, {w.dtype(), w.device()});
    dispatch_f32_f64(w.dtype(), op, [&](auto tag) {
      using T = decltype(tag);
      flip_transpose<T>(w.data<T>(), G, Og, Cg, w.size(2) * w.size(3) * w.size(4), wf.data<T>());
    });
    return conv3d_forward(OnCpu{}, gy, wf, Tensor(), flip_p);
  }
  Tensor gx = empty(x_shape, {gy.dtype(), gy.device()});
  const Geometry g(x_shape, w.shape(), spatial(gy), p);
  dispatch_f32_f64(gy.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    backward_data<T>(g, gy.data<T>(), w.data<T>(), gx.data<T>());
  });
  return gx;
}

Tensor conv3d_backward_weight(OnCpu, const Tensor& gy_in, const Tensor& x_in,
                              const Shape& weight_shape, const Conv3dParams& p) {
  constexpr const char* op = "conv3d_backward_weight";
  check_same_float(op, {gy_in, x_in});
  const Shape y_shape = conv_output_shape<3>(op, x_in.shape(), weight_shape, p);
  check_gy(op, gy_in, y_shape);
  if (auto gw = conv3d_backward_weight_tiles(gy_in, x_in, weight_shape, p)) return *gw;
  if (is_half(gy_in.dtype()))
    return conv3d_backward_weight(OnCpu{}, widen(gy_in), widen(x_in), weight_shape, p)
        .to(gy_in.dtype());
  const Tensor gy = gy_in.contiguous(), x = x_in.contiguous();
  Tensor gw = empty(weight_shape, {gy.dtype(), gy.device()});
  const Geometry g(x.shape(), weight_shape, spatial(gy), p);
  dispatch_f32_f64(gy.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    backward_weight<T>(g, gy.data<T>(), x.data<T>(), gw.data<T>());
  });
  return gw;
}

Tensor conv3d_backward_bias(OnCpu, const Tensor& gy_in) {
  check_same_float("conv3d_backward_bias", {gy_in});
  RG_CHECK(gy_in.dim() == 5,
           "conv3d_backward_bias: expected a 5-D (N, O, Do, Ho, Wo) gradient, got ",
           gy_in.describe());
  const Tensor gy = gy_in.contiguous();
  const int64_t N = gy.size(0), O = gy.size(1), P = gy.size(2) * gy.size(3) * gy.size(4);
  Tensor gb = empty({O}, {gy.dtype(), gy.device()});
  dispatch_floating(gy.dtype(), "conv3d_backward_bias", [&](auto tag) {
    using T = decltype(tag);
    backward_bias<T>(gy.data<T>(), N, O, P, gb.data<T>());
  });
  return gb;
}

}  // namespace rg
