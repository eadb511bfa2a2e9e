#include "ops/linear/linear.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/matmul/gemm.h"

namespace rg {
namespace {

using detail::MatRef;

using detail::gemm_ready;
using detail::mat_ref;
using detail::transposed;

// 16-bit tensors are converted to f32 around the GEMMs.
bool is_half(DType d) {
  return d == DType::f16 || d == DType::bf16;
}
Tensor to_f32(const Tensor& t) {
  return t.defined() && is_half(t.dtype()) ? t.to(DType::f32) : t;
}

// y2 = x2·wᵀ (+ bias on every row). x2: (M, I), w: (O, I), bias: (O).
Tensor linear_forward(const Tensor& x2_in, const Tensor& w_in, const Tensor& bias_in) {
  const DType dtype = x2_in.dtype();
  if (is_half(dtype)) return linear_forward(to_f32(x2_in), to_f32(w_in), to_f32(bias_in)).to(dtype);
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
    detail::gemm<T>(mat_ref<T>(x2), transposed(mat_ref<T>(w)), MatRef<T>{y, m, o, o, false},
                    bias.defined());
  });
  return y2;
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

class LinearBackward : public Node {
 public:
  // x2: (M, I) kept only for gweight; w: (O, I) kept only for gx.
  LinearBackward(Tensor x2, Tensor w, Shape x_shape)
      : x2_(std::move(x2)), w_(std::move(w)), x_shape_(std::move(x_shape)) {}
  std::string name() const override { return "LinearBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    const DType dtype = grads[0].dtype();
    const int64_t o = grads[0].size(-1);
    Tensor gy2 = to_f32(grads[0].reshape({-1, o}));
    gy2 = gemm_ready(gy2);
    Tensor gx, gw, gb;
    const bool want_x = next_edges[0].node != nullptr, want_w = next_edges[1].node != nullptr;
    const bool want_b = next_edges.size() > 2 && next_edges[2].node != nullptr;
    dispatch_f32_f64(gy2.dtype(), "linear_backward", [&](auto tag) {
      using T = decltype(tag);
      const auto g = mat_ref<T>(gy2);
      if (want_x) {  // gx = gy2·w: (M, O)·(O, I)
        const Tensor w = gemm_ready(to_f32(w_));
        Tensor gx2 = empty({g.rows, w.size(1)}, {gy2.dtype(), gy2.device()});
        detail::gemm<T>(g, mat_ref<T>(w), MatRef<T>{gx2.data<T>(), g.rows, w.size(1), w.size(1)},
                        false);
        gx = gx2.view(x_shape_);
      }
      if (want_w) {  // gweight = gy2ᵀ·x2: (O, M)·(M, I), gy2ᵀ read in place
        const Tensor x2 = gemm_ready(to_f32(x2_));
        gw = empty({o, x2.size(1)}, {gy2.dtype(), gy2.device()});
        detail::gemm<T>(transposed(g), mat_ref<T>(x2),
                        MatRef<T>{gw.data<T>(), o, x2.size(1), x2.size(1)}, false);
      }
    });
    if (want_b) gb = column_sums(gy2, gy2.dtype());
    auto back = [&](const Tensor& t) {
      return t.defined() && t.dtype() != dtype ? t.to(dtype) : t;
    };
    if (next_edges.size() > 2) return {back(gx), back(gw), back(gb)};
    return {back(gx), back(gw)};
  }
  void release_saved() override { x2_ = w_ = Tensor(); }

 private:
  Tensor x2_, w_;
  Shape x_shape_;
};

}  // namespace

Tensor linear(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in) {
  const auto cast = autocast_inputs(AutocastPolicy::lower_precision, x_in, weight_in, bias_in);
  const Tensor &x = cast[0], &weight = cast[1], &bias = cast[2];
  check_same_float("linear", {x, weight, bias});
  check_cpu("linear", {x, weight, bias});
  RG_CHECK(weight.dim() == 2, "linear: weight must be 2-D (out_features, in_features), got ",
           weight.describe());
  RG_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input ", x.describe(),
           " does not match weight ", weight.describe(), " (the last dim of the input must be ",
           weight.size(1), ")");
  RG_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)),
           "linear: bias must be 1-D with ", weight.size(0), " elements (out_features), got ",
           bias.describe());
  const int64_t in = weight.size(1), out = weight.size(0);
  // Detached: the node below is the only history of y (not a reshape node on the way).
  const Tensor x2 = x.detach().reshape({-1, in});
  Shape y_shape = x.shape();
  y_shape.back() = out;
  Tensor y =
      linear_forward(x2, weight.detach(), bias.defined() ? bias.detach() : Tensor()).view(y_shape);
  if (needs_grad({x, weight, bias})) {
    auto node =
        std::make_shared<LinearBackward>(weight.requires_grad() ? saved(x2) : Tensor(),
                                         x.requires_grad() ? saved(weight) : Tensor(), x.shape());
    if (bias.defined())
      record(node, {x, weight, bias}, {&y});
    else
      record(node, {x, weight}, {&y});
  }
  return y;
}

}  // namespace rg
