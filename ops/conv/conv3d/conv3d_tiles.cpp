// bf16 conv3d on the tile GEMM (conv3d_tiles.h): the tiles of conv3d_geometry.h, vol2col on
// bf16, detail::tile_gemm into f32, one rounding per output.
// - Forward: threads claim tiles (each with its own bf16 columns and f32 sums) and run the
//   tile GEMM W · cols on their thread; bias added in f32; each tile's outputs rounded and
//   written by that thread: the same bits for any thread count.
// - Backward-data, stride 1 (gy covering the whole output, padding within the kernel's reach,
//   at least 16 input channels per group):
//   the tile forward on gy with the flipped, transposed weight (a bf16 copy, exact). Otherwise
//   Wᵀ · gy into f32 columns (the GEMM split over the threads by rows), col2vol summing them in
//   f32 (threads by channels), then one rounding.
// - Backward-weight: gy · colsᵀ accumulated (accumulate=true) into one f32 partial per thread
//   over a fixed run of tiles, the partials summed in a fixed order, then one rounding.
#include "ops/conv/conv3d/conv3d_tiles.h"

#include <algorithm>
#include <memory>
#include <string>

#include "core/cpu_features.h"
#include "core/half.h"
#include "core/kernel_log.h"
#include "core/thread_pool.h"
#include "ops/conv/conv2d/conv2d_tiles.h"
#include "ops/conv/conv3d/conv3d_geometry.h"
#include "ops/conv/conv3d/vol2col.h"
#include "ops/conv/conv_eigen.h"
#include "ops/conv/conv_params.h"
#include "ops/matmul/gemm_tiles.h"

namespace rg {
namespace {

using detail::MatRef;
using detail::conv3d::Geometry;

using detail::conv_eigen::Scratch;

// Backward-data runs as the flipped forward only with at least this many channels per group.
constexpr int64_t kMinFlipChannels = 16;

bool takes(DType dtype) {
  return dtype == DType::bf16 && detail::tile_gemm_available();
}

std::string kernel_name() {
  return cpu_has(CpuIsa::amx) ? "bf16 tiles (amx)" : "bf16 tiles (avx512_bf16)";
}

// "x [N, C, D, H, W] w [O, C, kD, kH, kW] s1x1x1 p1x1x1 d1x1x1 g1 bf16": the problem a note names.
std::string conv3d_problem(const Shape& x, const Shape& w, const Conv3dParams& p, DType dtype) {
  const auto triple = [](const Conv3dTriple& t) {
    return std::to_string(t[0]) + "x" + std::to_string(t[1]) + "x" + std::to_string(t[2]);
  };
  return shape_str(x) + " w " + shape_str(w) + " s" + triple(p.stride) + " p" + triple(p.padding) +
         " d" + triple(p.dilation) + " g" + std::to_string(p.groups) + " " +
         std::string(dtype_name(dtype));
}

// The column matrix of one tile (K × (d1 − d0)·plane): the scratch, filled by vol2col, or the
// volume itself.
MatRef<const BFloat16> columns(const Geometry& g, const BFloat16* x, const Geometry::Tile& t,
                               BFloat16* scratch) {
  const int64_t cols = (t.d1 - t.d0) * g.plane;
  const BFloat16* xg = x + t.n * g.x_volume() + t.grp * g.x_group();
  if (g.identity()) return {xg + t.d0 * g.plane, g.K, cols, g.P, false};
  vol2col(xg, g.v, t.d0, t.d1, 0, g.Cg, scratch, cols);
  return {scratch, g.K, cols, cols, false};
}

// Rows of group grp of volume n of a (N, O, Do, Ho, Wo) tensor, over the tile's depths.
MatRef<const BFloat16> gy_rows(const Geometry& g, const BFloat16* gy, const Geometry::Tile& t) {
  return {gy + t.n * g.y_volume() + t.grp * g.Og * g.P + t.d0 * g.plane, g.Og,
          (t.d1 - t.d0) * g.plane, g.P, false};
}

MatRef<const BFloat16> weight(const Geometry& g, const BFloat16* w, int64_t grp) {
  return {w + grp * g.Og * g.K, g.Og, g.K, g.K, false};
}

// out[i] = bf16(in[i]) for i < n, split over the threads.
void round_all(const float* in, BFloat16* out, int64_t n) {
  parallel_for(n, int64_t{1} << 16, [&](int64_t b, int64_t e) {
    detail::tiles::round_to_bf16_kernels(in + b, out + b, e - b);
  });
}

Tensor forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv3dParams& p,
               const Shape& y_shape) {
  Tensor y = empty(y_shape, {x.dtype(), x.device()});
  const Geometry g(x.shape(), w.shape(), {y_shape[2], y_shape[3], y_shape[4]}, p);
  const BFloat16 *xp = x.data<BFloat16>(), *wp = w.data<BFloat16>();
  const BFloat16* bp = bias.defined() ? bias.data<BFloat16>() : nullptr;
  BFloat16* yp = y.data<BFloat16>();
  const int64_t col_size = g.identity() ? 0 : g.K * g.slab * g.plane;
  const int64_t sum_size = g.Og * g.slab * g.plane;
  struct Buffers {
    Scratch<BFloat16> col;
    Scratch<float> sums;
  };
  parallel_claim(
      g.tiles(),
      [&] {
        return Buffers{Scratch<BFloat16>(col_size), Scratch<float>(sum_size)};
      },
      [&](int64_t k, Buffers& s) {
        const Geometry::Tile t = g.tile(k);
        const int64_t cols = (t.d1 - t.d0) * g.plane;
        detail::tile_gemm(weight(g, wp, t.grp), columns(g, xp, t, s.col.get()),
                          MatRef<float>{s.sums.get(), g.Og, cols, cols, false}, false);
        for (int64_t o = 0; o < g.Og; ++o) {
          float* row = s.sums.get() + o * cols;
          if (bp) {
            const float b = bp[t.grp * g.Og + o];
            for (int64_t i = 0; i < cols; ++i) row[i] += b;
          }
          detail::tiles::round_to_bf16_kernels(
              row, yp + t.n * g.y_volume() + (t.grp * g.Og + o) * g.P + t.d0 * g.plane, cols);
        }
      });
  return y;
}

// wf[g·Cg + c, o, taps reversed] = w[g·Og + o, c, taps]: the weight of the stride-1
// convolution that computes backward-data (a copy: exact in bf16).
Tensor flip_transpose(const Tensor& w, int64_t G) {
  const int64_t Og = w.size(0) / G, Cg = w.size(1), kk = w.size(2) * w.size(3) * w.size(4);
  Tensor wf = empty({Cg * G, Og, w.size(2), w.size(3), w.size(4)}, {w.dtype(), w.device()});
  const BFloat16* src0 = w.data<BFloat16>();
  BFloat16* dst0 = wf.data<BFloat16>();
  for (int64_t go = 0; go < G * Og; ++go) {
    const int64_t grp = go / Og, o = go % Og;
    for (int64_t c = 0; c < Cg; ++c) {
      const BFloat16* src = src0 + (go * Cg + c) * kk;
      BFloat16* dst = dst0 + ((grp * Cg + c) * Og + o) * kk;
      for (int64_t t = 0; t < kk; ++t) dst[t] = src[kk - 1 - t];
    }
  }
  return wf;
}

}  // namespace

std::optional<Tensor> conv3d_forward_tiles(const Tensor& x_in, const Tensor& w_in,
                                           const Tensor& b_in, const Conv3dParams& p) {
  if (!takes(x_in.dtype()) || x_in.numel() == 0 || w_in.numel() == 0) return std::nullopt;
  const Shape y_shape = conv_output_shape<3>("conv3d", x_in.shape(), w_in.shape(), p);
  const Tensor x = x_in.contiguous(), w = w_in.contiguous();
  const Tensor bias = b_in.defined() ? b_in.contiguous() : Tensor();
  Tensor y = forward(x, w, bias, p, y_shape);
  note_kernel("conv3d", conv3d_problem(x.shape(), w.shape(), p, x.dtype()), kernel_name());
  return y;
}

std::optional<Tensor> conv3d_backward_data_tiles(const Tensor& gy_in, const Tensor& w_in,
                                                 const Shape& x_shape, const Conv3dParams& p,
                                                 const Tensor& b_in) {
  constexpr const char* op = "conv3d_backward_data";
  if (!takes(gy_in.dtype()) || gy_in.numel() == 0 || w_in.numel() == 0) return std::nullopt;
  const Shape y_shape = conv_output_shape<3>(op, x_shape, w_in.shape(), p);
  const Tensor gy = gy_in.contiguous(), w = w_in.contiguous();
  const Tensor bias = b_in.defined() ? b_in.contiguous() : Tensor();
  const std::string problem = conv3d_problem(x_shape, w.shape(), p, gy.dtype());
  // Stride 1: the tile forward of gy (padded by d·(k − 1) − p) with the flipped, transposed
  // kernel: O·kD·kH·kW-deep GEMMs and no col2vol.
  Conv3dParams flip_p{{1, 1, 1}, {0, 0, 0}, p.dilation, p.groups};
  // Few channels in x (the flipped forward's GEMM rows, padded to 32: a 1-channel input would
  // use 1/32 of each tile) take the col2vol path, whose GEMM rows are Cg·kD·kH·kW.
  bool flip = p.stride == Conv3dTriple{1, 1, 1} && gy.shape() == y_shape &&
              x_shape[1] / p.groups >= kMinFlipChannels;
  for (int a = 0; a < 3; ++a) {
    flip_p.padding[a] = p.dilation[a] * (w.size(2 + a) - 1) - p.padding[a];
    flip = flip && flip_p.padding[a] >= 0;
  }
  if (flip) {
    Tensor gx = forward(gy, flip_transpose(w, p.groups), bias, flip_p, x_shape);
    note_kernel(op, problem, kernel_name() + ", flipped forward");
    return gx;
  }
  const Geometry g(x_shape, w.shape(), {gy.size(2), gy.size(3), gy.size(4)}, p);
  const BFloat16 *gyp = gy.data<BFloat16>(), *wp = w.data<BFloat16>();
  Scratch<float> sums(g.N * g.x_volume()), col(g.K * g.slab * g.plane);
  std::fill(sums.get(), sums.get() + g.N * g.x_volume(), 0.0f);
  for (int64_t k = 0; k < g.tiles(); ++k) {
    const Geometry::Tile t = g.tile(k);
    const int64_t cols = (t.d1 - t.d0) * g.plane;
    detail::tile_gemm(detail::transposed(weight(g, wp, t.grp)), gy_rows(g, gyp, t),
                      MatRef<float>{col.get(), g.K, cols, cols, false}, false);
    float* gxg = sums.get() + t.n * g.x_volume() + t.grp * g.x_group();
    parallel_for(g.Cg, 1, [&](int64_t c0, int64_t c1) {
      col2vol(col.get(), cols, g.v, t.d0, t.d1, c0, c1, gxg);
    });
  }
  if (bias.defined()) {
    const BFloat16* bp = bias.data<BFloat16>();
    const int64_t volume = x_shape[2] * x_shape[3] * x_shape[4];
    parallel_for(g.N * g.C, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* row = sums.get() + r * volume;
        const float b = bp[r % g.C];
        for (int64_t i = 0; i < volume; ++i) row[i] += b;
      }
    });
  }
  Tensor gx = empty(x_shape, {gy.dtype(), gy.device()});
  round_all(sums.get(), gx.data<BFloat16>(), g.N * g.x_volume());
  note_kernel(op, problem, kernel_name());
  return gx;
}

std::optional<Tensor> conv3d_backward_weight_tiles(const Tensor& gy_in, const Tensor& x_in,
                                                   const Shape& weight_shape,
                                                   const Conv3dParams& p) {
  if (!takes(gy_in.dtype()) || gy_in.numel() == 0 || x_in.numel() == 0) return std::nullopt;
  const Tensor gy = gy_in.contiguous(), x = x_in.contiguous();
  const Geometry g(x.shape(), weight_shape, {gy.size(2), gy.size(3), gy.size(4)}, p);
  const BFloat16 *gyp = gy.data<BFloat16>(), *xp = x.data<BFloat16>();
  const int64_t tiles = g.tiles(), size = g.O * g.K;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(num_threads(), tiles));
  const int64_t col_size = g.identity() ? 0 : g.K * g.slab * g.plane;
  Scratch<float> sums(parts * size);  // one f32 partial per part
  parallel_for(parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t part = b; part < e; ++part) {
      float* acc = sums.get() + part * size;
      std::fill(acc, acc + size, 0.0f);
      Scratch<BFloat16> col(col_size);
      for (int64_t k = part * tiles / parts; k < (part + 1) * tiles / parts; ++k) {
        const Geometry::Tile t = g.tile(k);
        detail::tile_gemm(gy_rows(g, gyp, t), detail::transposed(columns(g, xp, t, col.get())),
                          MatRef<float>{acc + t.grp * g.Og * g.K, g.Og, g.K, g.K, false}, true);
      }
    }
  });
  // Fixed summation order (part 0, 1, 2, ...): deterministic whatever the thread timing.
  float* total = sums.get();
  for (int64_t k = 1; k < parts; ++k) {
    const float* q = sums.get() + k * size;
    for (int64_t i = 0; i < size; ++i) total[i] += q[i];
  }
  Tensor gw = empty(weight_shape, {gy.dtype(), gy.device()});
  round_all(total, gw.data<BFloat16>(), size);
  note_kernel("conv3d_backward_weight", conv3d_problem(x.shape(), weight_shape, p, x.dtype()),
              kernel_name());
  return gw;
}

}  // namespace rg
