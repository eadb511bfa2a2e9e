#pragma once
// How conv3d's CPU kernels cut a convolution into tiles of (volume, group, slab of output
// depths), shared by the vol2col + Eigen kernels (conv3d_cpu.cpp) and the bf16 tile GEMM ones
// (conv3d_tiles.cpp). Internal to ops/conv/conv3d.

#include <algorithm>
#include <cstdint>

#include "core/thread_pool.h"
#include "ops/conv/conv3d/vol2col.h"
#include "ops/conv/conv_params.h"

namespace rg::detail::conv3d {

// One tile's column matrix stays below this many elements (16 MiB of f32).
constexpr int64_t kMaxColElements = int64_t{4} << 20;

// Everything the kernels need about one convolution.
struct Geometry {
  int64_t N, C, O, G, Cg, Og;
  int64_t K;      // Cg·kD·kH·kW: rows of one group's column matrix
  int64_t P;      // Do·Ho·Wo: columns of one volume
  int64_t plane;  // Ho·Wo: columns per output depth
  int64_t slab;   // output depths per tile
  Vol2colGeometry v;

  Geometry(const Shape& x, const Shape& w, const Shape& out, const Conv3dParams& p) {
    N = x[0], C = x[1], O = w[0], G = p.groups, Cg = C / G, Og = O / G;
    v.channels = Cg, v.depth = x[2], v.height = x[3], v.width = x[4];
    for (int a = 0; a < 3; ++a) {
      v.kernel[a] = w[2 + a], v.stride[a] = p.stride[a], v.pad[a] = p.padding[a];
      v.dilation[a] = p.dilation[a], v.out[a] = out[a];
    }
    K = v.rows(), plane = v.plane(), P = out[0] * plane;
    slab = std::clamp<int64_t>(kMaxColElements / std::max<int64_t>(1, K * plane), 1, out[0]);
    // Enough tiles for every thread, even for one volume.
    const int64_t per_depth = N * G, threads = num_threads();
    if (per_depth * ((out[0] + slab - 1) / slab) < threads) {
      const int64_t want = (threads + per_depth - 1) / per_depth;  // slabs per volume
      slab = std::max<int64_t>(1, (out[0] + want - 1) / want);
    }
  }
  int64_t depth_out() const { return v.out[0]; }
  int64_t slabs() const { return (depth_out() + slab - 1) / slab; }
  int64_t tiles() const { return N * G * slabs(); }
  int64_t x_volume() const { return C * v.depth * v.height * v.width; }
  int64_t x_group() const { return Cg * v.depth * v.height * v.width; }
  int64_t y_volume() const { return O * P; }
  // The column matrix is the volume itself.
  bool identity() const {
    for (int a = 0; a < 3; ++a)
      if (v.kernel[a] != 1 || v.stride[a] != 1 || v.pad[a] != 0) return false;
    return v.out[0] == v.depth && v.out[1] == v.height && v.out[2] == v.width;
  }

  struct Tile {
    int64_t n, grp, d0, d1;
  };
  Tile tile(int64_t t) const {
    const int64_t s = t % slabs(), ng = t / slabs();
    const int64_t d0 = s * slab;
    return {ng / G, ng % G, d0, std::min(d0 + slab, depth_out())};
  }
};

}  // namespace rg::detail::conv3d
