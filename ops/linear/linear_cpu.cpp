// linear on the CPU: Eigen GEMMs reading the transposed operands in place, the bias written
// first and added by the GEMM; bf16 on the bf16 tile GEMM where the CPU has one.
#include <algorithm>
#include <vector>

#include "core/cpu_features.h"
#include "core/kernel_log.h"
#include "core/thread_pool.h"
#include "ops/linear/linear_kernel.h"
#include "ops/matmul/gemm.h"
#include "ops/matmul/gemm_tiles.h"

namespace rg::detail {
namespace {

// 16-bit tensors are converted to f32 around the GEMMs.
bool is_half(DType d) {
  return d == DType::f16 || d == DType::bf16;
}
Tensor to_f32(const Tensor& t) {
  return t.defined() && is_half(t.dtype()) ? t.to(DType::f32) : t;
}

// Σ over rows of gy2 (M, O), accumulated in f64: a sum over the whole batch (and sequence),
// where f32 accumulation would lose digits. Split by columns, so each output element is summed
// in the same order whatever the thread count.
Tensor column_sums(const Tensor& gy2, DType out_dtype) {
  const int64_t m = gy2.size(0), o = gy2.size(1);
  const int64_t rs = gy2.strides()[0], cs = gy2.strides()[1];
  Tensor out = empty({o}, {out_dtype, gy2.device()});
  dispatch_floating(gy2.dtype(), "linear", [&](auto tag) {
    using T = decltype(tag);
    const T* g = static_cast<const T*>(gy2.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    parallel_for(o, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(m, 1)),
                 [&](int64_t j0, int64_t j1) {
                   std::vector<double> acc(static_cast<std::size_t>(j1 - j0), 0.0);
                   for (int64_t i = 0; i < m; ++i)
                     for (int64_t j = j0; j < j1; ++j)
                       acc[j - j0] += static_cast<double>(convert<double>(g[i * rs + j * cs]));
                   for (int64_t j = j0; j < j1; ++j) dst[j] = convert<T>(acc[j - j0]);
                 });
  });
  return out;
}

// bf16 on the CPU's bf16 dot products (ops/matmul/gemm_tiles.h): f32 results, rounded once.
bool on_tiles(DType d) {
  return d == DType::bf16 && tile_gemm_available();
}

// a · b in f32 on `device` (+ init, an f32 (rows, cols) tensor, when defined).
Tensor tile_product(const MatRef<const BFloat16>& a, const MatRef<const BFloat16>& b,
                    const Tensor& init, const Device& device) {
  Tensor c = init.defined() ? init : empty({a.rows, b.cols}, {DType::f32, device});
  tile_gemm(a, b, MatRef<float>{c.data<float>(), a.rows, b.cols, b.cols, false}, init.defined());
  return c;
}

}  // namespace

Tensor linear_forward(OnCpu on, const Tensor& x2_in, const Tensor& w_in, const Tensor& bias_in) {
  const DType dtype = x2_in.dtype();
  if (on_tiles(dtype)) {
    const Tensor x2 = gemm_ready(x2_in), w = gemm_ready(w_in);
    const int64_t m = x2.size(0), o = w.size(0);
    // Rows start as the bias (f32) and the GEMM adds into them.
    Tensor y = bias_in.defined()
                   ? bias_in.to(DType::f32).reshape({1, o}).expand({m, o}).contiguous()
                   : Tensor();
    y = tile_product(mat_ref<BFloat16>(x2), transposed(mat_ref<BFloat16>(w)), y, x2.device());
    note_kernel("linear", shape_str(x2.shape()) + " w " + shape_str(w.shape()) + " bf16",
                cpu_has(CpuIsa::amx) ? "bf16 tiles (amx)" : "bf16 tiles (avx512_bf16)");
    return y.to(dtype);
  }
  if (is_half(dtype))
    return linear_forward(on, to_f32(x2_in), to_f32(w_in), to_f32(bias_in)).to(dtype);
  const Tensor x2 = gemm_ready(x2_in), w = gemm_ready(w_in);
  const Tensor bias = bias_in.defined() ? bias_in.contiguous() : Tensor();
  const int64_t m = x2.size(0), o = w.size(0);
  Tensor y2 = empty({m, o}, {dtype, x2.device()});
  dispatch_f32_f64(dtype, "linear", [&](auto tag) {
    using T = decltype(tag);
    T* y = y2.data<T>();
    if (bias.defined()) {
      // Rows start as the bias and the GEMM adds into them: no separate pass to add the bias.
      const T* b = bias.data<T>();
      parallel_for(m, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(o, 1)),
                   [&](int64_t r0, int64_t r1) {
                     for (int64_t r = r0; r < r1; ++r) std::copy_n(b, o, y + r * o);
                   });
    }
    gemm<T>(mat_ref<T>(x2), transposed(mat_ref<T>(w)), MatRef<T>{y, m, o, o, false},
            bias.defined());
  });
  return y2;
}

LinearGrads linear_backward(OnCpu, const Tensor& gy2_in, const Tensor& x2_in, const Tensor& w_in,
                            LinearWants wants) {
  const DType dtype = gy2_in.dtype();
  if (on_tiles(dtype)) {
    const Tensor gy2 = gemm_ready(gy2_in);
    const auto g = mat_ref<BFloat16>(gy2);
    LinearGrads grads;
    if (wants.x2) {  // gx2 = gy2·w: (M, O)·(O, I)
      const Tensor w = gemm_ready(w_in);
      grads.x2 = tile_product(g, mat_ref<BFloat16>(w), Tensor(), gy2.device()).to(dtype);
    }
    if (wants.weight) {  // gweight = gy2ᵀ·x2: (O, M)·(M, I), gy2ᵀ read in place
      const Tensor x2 = gemm_ready(x2_in);
      grads.weight =
          tile_product(transposed(g), mat_ref<BFloat16>(x2), Tensor(), gy2.device()).to(dtype);
    }
    if (wants.bias) grads.bias = column_sums(gy2, dtype);
    return grads;
  }
  const Tensor gy2 = gemm_ready(to_f32(gy2_in));
  const int64_t o = gy2.size(1);
  LinearGrads grads;
  dispatch_f32_f64(gy2.dtype(), "linear_backward", [&](auto tag) {
    using T = decltype(tag);
    const auto g = mat_ref<T>(gy2);
    if (wants.x2) {  // gx2 = gy2·w: (M, O)·(O, I)
      const Tensor w = gemm_ready(to_f32(w_in));
      grads.x2 = empty({g.rows, w.size(1)}, {gy2.dtype(), gy2.device()});
      gemm<T>(g, mat_ref<T>(w), MatRef<T>{grads.x2.data<T>(), g.rows, w.size(1), w.size(1)}, false);
    }
    if (wants.weight) {  // gweight = gy2ᵀ·x2: (O, M)·(M, I), gy2ᵀ read in place
      const Tensor x2 = gemm_ready(to_f32(x2_in));
      grads.weight = empty({o, x2.size(1)}, {gy2.dtype(), gy2.device()});
      gemm<T>(transposed(g), mat_ref<T>(x2),
              MatRef<T>{grads.weight.data<T>(), o, x2.size(1), x2.size(1)}, false);
    }
  });
  if (wants.bias) grads.bias = column_sums(gy2, gy2.dtype());
  for (Tensor* t : {&grads.x2, &grads.weight, &grads.bias})
    if (t->defined() && t->dtype() != dtype) *t = t->to(dtype);
  return grads;
}

}  // namespace rg::detail
