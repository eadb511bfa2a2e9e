#include "ops/max_pool3d/max_pool3d.h"

#include <cmath>
#include <limits>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/elementwise/elementwise.h"

namespace rg {
namespace {

struct Geometry {
  int64_t planes = 0;   // N·C
  int64_t in[3] = {};   // D, H, W
  int64_t out[3] = {};  // OD, OH, OW
  Pool3dSize k, s, p, dil;
  int64_t in_volume() const { return in[0] * in[1] * in[2]; }
  int64_t out_volume() const { return out[0] * out[1] * out[2]; }
};

Geometry geometry(const Tensor& x, Pool3dSize k, Pool3dSize s, Pool3dSize p, Pool3dSize dil) {
  constexpr const char* op = "max_pool3d";
  RG_CHECK(x.dim() == 5, op, ": input must be 5-D (N, C, D, H, W), got ", x.describe());
  if (s == Pool3dSize{}) s = k;
  Geometry g;
  g.planes = x.size(0) * x.size(1), g.k = k, g.s = s, g.p = p, g.dil = dil;
  for (int a = 0; a < 3; ++a) {
    RG_CHECK(k[a] > 0 && s[a] > 0 && dil[a] > 0, op,
             ": kernel_size, stride and dilation must be > 0, got kernel_size ", k, ", stride ", s,
             ", dilation ", dil);
    RG_CHECK(p[a] >= 0 && p[a] <= k[a] / 2, op, ": padding ", p,
             " must be >= 0 and at most half the kernel_size ", k);
    g.in[a] = x.size(2 + a);
    const int64_t span = g.in[a] + 2 * p[a] - dil[a] * (k[a] - 1) - 1;
    RG_CHECK(span >= 0, op, ": output size would be <= 0 for input ", x.describe(),
             " with kernel_size ", k, ", padding ", p, ", dilation ", dil);
    g.out[a] = span / s[a] + 1;
  }
  return g;
}

// One task per (n, c) volume: a backward scatter never races (every window of a volume writes
// into that volume only).
int64_t volume_grain(int64_t work) {
  return std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, work));
}

void forward_cpu(const Tensor& x, const Geometry& g, const Tensor& y, const Tensor& idx) {
  dispatch_floating(x.dtype(), "max_pool3d", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* xd = static_cast<const T*>(x.data_ptr());
    T* yd = static_cast<T*>(y.data_ptr());
    int64_t* id = idx.data<int64_t>();
    const int64_t D = g.in[0], H = g.in[1], W = g.in[2];
    const int64_t window = g.k.d * g.k.h * g.k.w;
    parallel_for(g.planes, volume_grain(g.out_volume() * window), [&](int64_t lo, int64_t hi) {
      for (int64_t v = lo; v < hi; ++v) {
        const T* xv = xd + v * g.in_volume();
        T* yv = yd + v * g.out_volume();
        int64_t* iv = id + v * g.out_volume();
        for (int64_t od = 0; od < g.out[0]; ++od)
          for (int64_t oh = 0; oh < g.out[1]; ++oh)
            for (int64_t ow = 0; ow < g.out[2]; ++ow) {
              C best = -std::numeric_limits<C>::infinity();
              int64_t best_i = -1;  // stays -1 only for a window that sees padding only
              for (int64_t a = 0; a < g.k.d; ++a) {
                const int64_t i0 = od * g.s.d - g.p.d + a * g.dil.d;
                if (i0 < 0 || i0 >= D) continue;
                for (int64_t b = 0; b < g.k.h; ++b) {
                  const int64_t i1 = oh * g.s.h - g.p.h + b * g.dil.h;
                  if (i1 < 0 || i1 >= H) continue;
                  for (int64_t e = 0; e < g.k.w; ++e) {
                    const int64_t i2 = ow * g.s.w - g.p.w + e * g.dil.w;
                    if (i2 < 0 || i2 >= W) continue;
                    const int64_t at = (i0 * H + i1) * W + i2;
                    const C val = static_cast<C>(xv[at]);
                    // Strictly greater: the first maximum wins ties, as in PyTorch; a NaN
                    // always replaces, so NaN propagates to the output.
                    if (best_i < 0 || val > best || std::isnan(val)) {
                      best = val;
                      best_i = at;
                    }
                  }
                }
              }
              const int64_t o = (od * g.out[1] + oh) * g.out[2] + ow;
              yv[o] = T(best);
              iv[o] = best_i;
            }
      }
    });
  });
}

// gx must be zero-filled.
void backward_cpu(const Tensor& gy, const Tensor& idx, const Tensor& gx) {
  const int64_t planes = gx.size(0) * gx.size(1);
  const int64_t in = gx.size(2) * gx.size(3) * gx.size(4);
  const int64_t out = gy.size(2) * gy.size(3) * gy.size(4);
  dispatch_floating(gy.dtype(), "max_pool3d_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* gyd = static_cast<const T*>(gy.data_ptr());
    const int64_t* id = idx.data<int64_t>();
    T* gxd = static_cast<T*>(gx.data_ptr());
    parallel_for(planes, volume_grain(out), [&](int64_t lo, int64_t hi) {
      for (int64_t v = lo; v < hi; ++v) {
        const T* gyv = gyd + v * out;
        const int64_t* iv = id + v * out;
        T* gxv = gxd + v * in;
        for (int64_t i = 0; i < out; ++i) {
          if (iv[i] < 0) continue;
          gxv[iv[i]] = T(static_cast<C>(gxv[iv[i]]) + static_cast<C>(gyv[i]));
        }
      }
    });
  });
}

class MaxPool3dBackward : public Node {
 public:
  MaxPool3dBackward(Tensor indices, Shape input_shape)
      : indices_(std::move(indices)), input_shape_(std::move(input_shape)) {}
  std::string name() const override { return "MaxPool3dBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const Tensor gy = g[0].contiguous();
    Tensor gx = zeros(input_shape_, {gy.dtype(), gy.device()});
    backward_cpu(gy, indices_, gx);
    return {gx};
  }
  void release_saved() override { indices_ = Tensor(); }

 private:
  Tensor indices_;
  Shape input_shape_;
};

}  // namespace

MaxPool3dResult max_pool3d(const Tensor& x, Pool3dSize kernel_size, Pool3dSize stride,
                           Pool3dSize padding, Pool3dSize dilation) {
  check_same_float("max_pool3d", {x});
  const Geometry g = geometry(x, kernel_size, stride, padding, dilation);
  check_cpu("max_pool3d", {x});
  const Tensor xc = x.detach().contiguous();
  const Shape out_shape{x.size(0), x.size(1), g.out[0], g.out[1], g.out[2]};
  MaxPool3dResult r;
  r.output = empty(out_shape, {x.dtype(), x.device()});
  r.indices = empty(out_shape, {DType::i64, x.device()});
  forward_cpu(xc, g, r.output, r.indices);
  if (needs_grad({x}))
    record(std::make_shared<MaxPool3dBackward>(saved(r.indices), x.shape()), {x}, {&r.output});
  return r;
}

}  // namespace rg
