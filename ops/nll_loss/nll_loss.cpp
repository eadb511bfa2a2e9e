#include "ops/nll_loss/nll_loss.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "ops/autocast/autocast_policy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/nll_loss/class_target.h"

namespace rg {
namespace detail {

Lanes check_class_target(std::string_view op, const Tensor& input, const Tensor& target,
                         const Tensor& weight, int64_t ignore_index) {
  RG_CHECK(input.defined() && target.defined(), op, ": input and target must be defined");
  check_same_float(op, {input, weight});
  check_cpu(op, {input, target, weight});
  RG_CHECK(input.dim() >= 1, op, ": input must be (N, C, ...) or (C), got ", input.describe());
  RG_CHECK(target.dtype() == DType::i64, op, ": target must hold i64 class indices, got ",
           target.describe());
  RG_CHECK(target.device() == input.device(), op, ": device mismatch, input ", input.describe(),
           " vs target ", target.describe());
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  Shape expected = input.shape();
  expected.erase(expected.begin() + class_dim);
  RG_CHECK(target.shape() == expected, op, ": target ", target.describe(), " does not match input ",
           input.describe(), " (expected target shape ", shape_str(expected), ")");
  const int64_t classes = input.shape()[class_dim];
  if (weight.defined())
    RG_CHECK(weight.dim() == 1 && weight.numel() == classes, op, ": weight must have shape [",
             classes, "] (one per class), got ", weight.describe());
  // A serial pass: cheap next to the loss, and the error names the first bad value.
  const Tensor t = target.contiguous();
  const int64_t* pt = t.data<int64_t>();
  for (int64_t n = 0; n < t.numel(); ++n)
    RG_CHECK(pt[n] == ignore_index || (pt[n] >= 0 && pt[n] < classes), op, ": target ", pt[n],
             " is out of range for C = ", classes, " classes (expected 0 <= target < ", classes,
             ", or ignore_index ", ignore_index, ")");
  return lanes_around(input.shape(), class_dim);
}

}  // namespace detail

namespace {

// Reads weight[t] as double, or 1 without weights.
template <class T>
struct ClassWeight {
  const T* w = nullptr;
  double operator()(int64_t t) const {
    return w ? static_cast<double>(static_cast<compute_t<T>>(w[t])) : 1.0;
  }
};

class NllLossBackward : public Node {
 public:
  NllLossBackward(Tensor target, Tensor weight, Shape x_shape, Lanes lanes, Reduction reduction,
                  int64_t ignore_index, double total_weight)
      : target_(std::move(target)),
        weight_(std::move(weight)),
        x_shape_(std::move(x_shape)),
        lanes_(lanes),
        reduction_(reduction),
        ignore_index_(ignore_index),
        total_weight_(total_weight) {}
  std::string name() const override { return "NllLossBackward"; }
  void release_saved() override { target_ = weight_ = Tensor(); }

  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const Tensor gy = g[0].contiguous();
    Tensor gx = zeros(x_shape_, {gy.dtype(), gy.device()});
    const Lanes l = lanes_;
    const int64_t* pt = target_.data<int64_t>();
    dispatch_floating(gy.dtype(), "nll_loss_backward", [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* pg = static_cast<const T*>(gy.data_ptr());
      T* px = static_cast<T*>(gx.data_ptr());
      const ClassWeight<T> w{weight_.defined() ? static_cast<const T*>(weight_.data_ptr())
                                               : nullptr};
      const bool per_element = reduction_ == Reduction::none;
      const double scale = reduction_ == Reduction::mean ? 1.0 / total_weight_ : 1.0;
      const double g_all = per_element ? 0.0 : static_cast<C>(pg[0]) * scale;
      parallel_for(l.count(), 1 << 15, [&](int64_t b, int64_t e) {
        for (int64_t n = b; n < e; ++n) {
          const int64_t t = pt[n];
          if (t == ignore_index_) continue;
          const double gn = per_element ? static_cast<double>(static_cast<C>(pg[n])) : g_all;
          const int64_t a = n / l.inner, i = n % l.inner;
          px[(a * l.size + t) * l.inner + i] = T(static_cast<C>(-w(t) * gn));
        }
      });
    });
    return {gx, Tensor(), Tensor()};
  }

 private:
  Tensor target_, weight_;
  Shape x_shape_;
  Lanes lanes_;
  Reduction reduction_;
  int64_t ignore_index_;
  double total_weight_;
};

}  // namespace

Tensor nll_loss(const Tensor& log_probs_in, const Tensor& target_in, const Tensor& class_weight,
                Reduction reduction, int64_t ignore_index) {
  const auto cast = autocast_inputs(AutocastPolicy::float32, log_probs_in, class_weight);
  const Tensor &log_probs = cast[0], &weight_in = cast[1];
  const Lanes l =
      detail::check_class_target("nll_loss", log_probs, target_in, weight_in, ignore_index);
  const Tensor x = log_probs.contiguous(), target = target_in.contiguous();
  const Tensor weight = weight_in.defined() ? weight_in.contiguous() : Tensor();
  const bool per_element = reduction == Reduction::none;
  Tensor out = empty(per_element ? target.shape() : Shape{}, {x.dtype(), x.device()});
  double total_weight = 0;
  dispatch_floating(x.dtype(), "nll_loss", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = static_cast<const T*>(x.data_ptr());
    const int64_t* pt = target.data<int64_t>();
    T* po = static_cast<T*>(out.data_ptr());
    const ClassWeight<T> w{weight.defined() ? static_cast<const T*>(weight.data_ptr()) : nullptr};
    // Loss and weight sums per chunk in double: a mean over a large batch of pixels is a long
    // sum, and the total weight must be exact enough to divide by.
    const auto [loss_sum, weight_sum] =
        parallel_sum<2>(l.count(), 1 << 14, [&](int64_t b, int64_t e) {
          std::array<double, 2> acc{};
          for (int64_t n = b; n < e; ++n) {
            const int64_t t = pt[n];
            double loss = 0;
            if (t != ignore_index) {
              const int64_t a = n / l.inner, i = n % l.inner;
              const double wt = w(t);
              loss = -wt * static_cast<C>(px[(a * l.size + t) * l.inner + i]);
              acc[0] += loss;
              acc[1] += wt;
            }
            if (per_element) po[n] = T(static_cast<C>(loss));
          }
          return acc;
        });
    total_weight = weight_sum;
    if (reduction == Reduction::sum) po[0] = T(static_cast<C>(loss_sum));
    if (reduction == Reduction::mean) po[0] = T(static_cast<C>(loss_sum / weight_sum));
  });
  if (needs_grad({log_probs}))
    record(std::make_shared<NllLossBackward>(saved(target), saved(weight), x.shape(), l, reduction,
                                             ignore_index, total_weight),
           {log_probs, target_in, weight_in}, {&out});
  return out;
}

}  // namespace rg
