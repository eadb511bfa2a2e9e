#include "ops/matmul/matmul.h"

#include <algorithm>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/matmul/gemm.h"

namespace rg {
namespace {

Shape batch_of(const Shape& shape) {
  return Shape(shape.begin(), shape.end() - 2);
}

// Saves b only when a needs a gradient and a only when b does: ga = gy·bᵀ, gb = aᵀ·gy.
class MatmulBackward : public Node {
 public:
  MatmulBackward(Tensor a, Tensor b, Shape a_shape, Shape b_shape)
      : a_(std::move(a)),
        b_(std::move(b)),
        a_shape_(std::move(a_shape)),
        b_shape_(std::move(b_shape)) {}
  std::string name() const override { return "MatmulBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    Tensor ga, gb;
    if (next_edges[0].node)
      ga = detail::batched_matmul(g[0], b_.transpose(-1, -2), batch_of(a_shape_));
    if (next_edges[1].node)
      gb = detail::batched_matmul(a_.transpose(-1, -2), g[0], batch_of(b_shape_));
    return {ga, gb};
  }
  void release_saved() override { a_ = b_ = Tensor(); }

 private:
  Tensor a_, b_;
  Shape a_shape_, b_shape_;
};

// a: (A..., n, k), b: (B..., k, m), both at least 2-D and already checked.
Tensor matmul_nd(const Tensor& a, const Tensor& b) {
  const Shape full = broadcast_shapes(batch_of(a.shape()), batch_of(b.shape()), "matmul");
  Tensor y = detail::batched_matmul(a, b, full);
  if (needs_grad({a, b})) {
    auto node = std::make_shared<MatmulBackward>(b.requires_grad() ? saved(a) : Tensor(),
                                                 a.requires_grad() ? saved(b) : Tensor(), a.shape(),
                                                 b.shape());
    record(node, {a, b}, {&y});
  }
  return y;
}

}  // namespace

Tensor detail::batched_matmul(const Tensor& a, const Tensor& b, const Shape& out_batch) {
  return dispatch_device<Kernels::cpu_and_cuda>(
      "matmul", a.device(), [&](auto on) { return batched_matmul(on, a, b, out_batch); });
}

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  const auto cast = autocast_inputs(AutocastPolicy::lower_precision, a_in, b_in);
  const Tensor &a = cast[0], &b = cast[1];
  check_same_float("matmul", {a, b});
  RG_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: both operands need at least 1 dim, got ",
           a.describe(), " and ", b.describe());
  const int64_t ka = a.size(-1), kb = b.dim() == 1 ? b.size(0) : b.size(-2);
  RG_CHECK(ka == kb, "matmul: shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
           " cannot be multiplied (inner sizes ", ka, " vs ", kb, ")");
  // Batch dims (all but the last two) broadcast; checked here to name both full shapes.
  for (int64_t i = 3; i <= std::min(a.dim(), b.dim()); ++i) {
    const int64_t da = a.size(-i), db = b.size(-i);
    RG_CHECK(da == db || da == 1 || db == 1, "matmul: batch dims of ", a.describe(), " and ",
             b.describe(), " cannot be broadcast together (", da, " vs ", db, ")");
  }
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;  // (k) -> (1, k)
  const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;  // (k) -> (k, 1)
  Tensor y;
  if (b2.dim() == 2 && a2.dim() > 2) {
    // (A..., n, k)·(k, m) is one (A·n, k)·(k, m) GEMM: bigger panels for the threads, and gb
    // becomes a single aᵀ·gy over the whole batch instead of one product per item.
    Shape out_shape = a2.shape();
    out_shape.back() = b2.size(1);
    y = matmul_nd(a2.reshape({-1, ka}), b2).view(out_shape);
  } else {
    y = matmul_nd(a2, b2);
  }
  if (a.dim() == 1) y = y.squeeze(-2);
  if (b.dim() == 1) y = y.squeeze(-1);
  return y;
}

}  // namespace rg
