#include "ops/binary_cross_entropy_with_logits/binary_cross_entropy_with_logits.h"

#include "core/autograd.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/binary_cross_entropy_with_logits/bce_functors.h"
#include "ops/elementwise/elementwise.h"
#include "ops/mean/mean.h"
#include "ops/sum/sum.h"

namespace rg {
namespace {

constexpr const char* kOp = "binary_cross_entropy_with_logits";
constexpr const char* kBackward = "binary_cross_entropy_with_logits_backward";

// Runs f(w, pw, ins...) pointwise, passing 1 for an absent weight or pos_weight — so the
// common unweighted case reads only its own operands, on the contiguous fast path.
template <class F, class... Ts>
Tensor with_weights(std::string_view op, F f, const Tensor& w, const Tensor& pw, const Ts&... ins) {
  if (w.defined() && pw.defined()) return pointwise(op, f, w, pw, ins...);
  if (w.defined()) return pointwise(op, UnitPosWeight<F>{f}, w, ins...);
  if (pw.defined()) return pointwise(op, UnitWeight<F>{f}, pw, ins...);
  return pointwise(op, UnitWeights<F>{f}, ins...);
}

void check_broadcasts_to(const Tensor& t, const char* what, const Tensor& x) {
  if (!t.defined()) return;
  bool ok = t.dim() <= x.dim();
  for (int64_t d = 1; ok && d <= t.dim(); ++d) ok = t.size(-d) == 1 || t.size(-d) == x.size(-d);
  RG_CHECK(ok, kOp, ": ", what, " ", t.describe(), " cannot be broadcast to input ", x.describe());
}

}  // namespace

Tensor binary_cross_entropy_with_logits(const Tensor& x_in, const Tensor& y_in,
                                        const Tensor& weight_in, const Tensor& pos_weight_in,
                                        Reduction reduction) {
  const auto cast = autocast_inputs(AutocastPolicy::float32, x_in, y_in, weight_in, pos_weight_in);
  const Tensor &x = cast[0], &y = cast[1], &weight = cast[2], &pos_weight = cast[3];
  RG_CHECK(x.defined() && y.defined(), kOp, ": input and target must be defined");
  check_same_float(kOp, {x, y, weight, pos_weight});
  RG_CHECK(y.shape() == x.shape(), kOp, ": target ", y.describe(),
           " must have the same shape as input ", x.describe());
  check_broadcasts_to(weight, "weight", x);
  check_broadcasts_to(pos_weight, "pos_weight", x);
  Tensor out = with_weights(kOp, BceWithLogitsFn{}, weight, pos_weight, x, y);
  double scale = 1.0;
  if (reduction == Reduction::sum) out = sum(out);
  if (reduction == Reduction::mean) {
    out = mean(out);
    scale = 1.0 / static_cast<double>(x.numel());
  }
  // g is the loss's gradient: x's shape (none) or a 0-d tensor that broadcasts.
  if (needs_grad({x, y}))
    record_backward(
        "BinaryCrossEntropyWithLogitsBackward", {x, y, weight, pos_weight}, out,
        [x = saved(x), y = saved(y), w = saved(weight), pw = saved(pos_weight), scale,
         need_x = x.requires_grad(), need_y = y.requires_grad()](const Tensor& g) -> Grads {
          Tensor gx, gy;
          if (need_x) gx = with_weights(kBackward, BceWithLogitsGradInputFn{scale}, w, pw, g, x, y);
          if (need_y)
            gy = with_weights(kBackward, BceWithLogitsGradTargetFn{scale}, w, pw, g, x, y);
          return {gx, gy, Tensor(), Tensor()};
        });
  return out;
}

}  // namespace rg
