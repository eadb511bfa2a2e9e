// nll_loss on the CPU: one pass over the lanes reads the target's log-probability; loss and
// weight sums per chunk in double (a mean over a large batch of pixels is a long sum, and the
// total weight must be exact enough to divide by), combined in a fixed order.
#include "core/thread_pool.h"
#include "ops/nll_loss/nll_loss_kernel.h"

namespace rg::detail {
namespace {

// Reads weight[t] as double, or 1 without weights.
template <class T>
struct ClassWeight {
  const T* w = nullptr;
  double operator()(int64_t t) const {
    return w ? static_cast<double>(static_cast<compute_t<T>>(w[t])) : 1.0;
  }
};

template <class T>
ClassWeight<T> class_weight(const Tensor& weight) {
  return {weight.defined() ? static_cast<const T*>(weight.data_ptr()) : nullptr};
}

}  // namespace

ReducedLoss nll_loss_forward(OnCpu, const Tensor& x_in, const Tensor& target_in,
                             const Tensor& weight_in, const ClassTargetArgs& args) {
  const Lanes l = args.lanes;
  check_target_range("nll_loss", target_in, l.size, args.ignore_index);
  const Tensor x = x_in.contiguous(), target = target_in.contiguous();
  const Tensor weight = weight_in.defined() ? weight_in.contiguous() : Tensor();
  const bool per_element = args.reduction == Reduction::none;
  Tensor out = empty(per_element ? target.shape() : Shape{}, {x.dtype(), x.device()});
  double total_weight = 0;
  dispatch_floating(x.dtype(), "nll_loss", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = static_cast<const T*>(x.data_ptr());
    const int64_t* pt = target.data<int64_t>();
    T* po = static_cast<T*>(out.data_ptr());
    const ClassWeight<T> w = class_weight<T>(weight);
    const auto [loss_sum, weight_sum] =
        parallel_sum<2>(l.count(), 1 << 14, [&](int64_t b, int64_t e) {
          std::array<double, 2> acc{};
          for (int64_t n = b; n < e; ++n) {
            const int64_t t = pt[n];
            double loss = 0;
            if (t != args.ignore_index) {
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
    if (args.reduction == Reduction::sum) po[0] = T(static_cast<C>(loss_sum));
    if (args.reduction == Reduction::mean) po[0] = T(static_cast<C>(loss_sum / weight_sum));
  });
  return {out, scalar_tensor(total_weight, {DType::f64})};
}

Tensor nll_loss_backward(OnCpu, const Tensor& gy_in, const Tensor& target_in, const Tensor& weight,
                         const Shape& x_shape, const ClassTargetArgs& args,
                         const Tensor& total_weight) {
  const Tensor gy = gy_in.contiguous(), target = target_in.contiguous();
  Tensor gx = zeros(x_shape, {gy.dtype(), gy.device()});
  const Lanes l = args.lanes;
  const int64_t* pt = target.data<int64_t>();
  dispatch_floating(gy.dtype(), "nll_loss_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* pg = static_cast<const T*>(gy.data_ptr());
    T* px = static_cast<T*>(gx.data_ptr());
    const ClassWeight<T> w = class_weight<T>(weight);
    const bool per_element = args.reduction == Reduction::none;
    const double scale = args.reduction == Reduction::mean ? 1.0 / total_weight.item() : 1.0;
    const double g_all = per_element ? 0.0 : static_cast<C>(pg[0]) * scale;
    // Each lane writes the one element of its target class: no two lanes share one.
    parallel_for(l.count(), 1 << 15, [&](int64_t b, int64_t e) {
      for (int64_t n = b; n < e; ++n) {
        const int64_t t = pt[n];
        if (t == args.ignore_index) continue;
        const double gn = per_element ? static_cast<double>(static_cast<C>(pg[n])) : g_all;
        const int64_t a = n / l.inner, i = n % l.inner;
        px[(a * l.size + t) * l.inner + i] = T(static_cast<C>(-w(t) * gn));
      }
    });
  });
  return gx;
}

}  // namespace rg::detail
