#include "ops/batch_norm/batch_norm.h"
#include "ops/batch_norm/batch_norm_count.h"

#include <algorithm>
#include <cmath>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "ops/batch_norm/batch_norm_channels_last.h"
#include "ops/batch_norm/batch_norm_kernels.h"
#include "ops/batch_norm/batch_norm_math.h"
#include "ops/elementwise/elementwise.h"

namespace rg {
namespace {

using Channels = std::vector<double>;  // one f64 value per channel

void check_input(std::string_view op, const Tensor& x) {
  check_same_float(op, {x});
  RG_CHECK(x.dim() >= 2, op, ": input must be (N, C, *) with at least 2 dims, got ", x.describe());
}

// A per-channel tensor (weight, bias, running stats, mean, invstd): undefined or (C).
void check_channels(std::string_view op, const char* name, const Tensor& t, const Tensor& x) {
  if (!t.defined()) return;
  RG_CHECK(t.device() == x.device(), op, ": device mismatch, input ", x.describe(), " vs ", name,
           " ", t.describe());
  RG_CHECK(is_floating(t.dtype()), op, ": ", name, " must be floating, got ", t.describe());
  RG_CHECK(t.dim() == 1 && t.size(0) == x.size(1), op, ": ", name, " must have shape [", x.size(1),
           "] (one value per channel of input ", x.describe(), "), got ", t.describe());
}

// The per-channel parameters (weight, bias, running stats) share one floating dtype: the
// input's, or f32 under a 16-bit input — cuDNN's mixed mode, which O2 mixed precision relies on
// (the model in f16 except BatchNorm). Statistics are computed in f64 either way.
void check_params(std::string_view op, const Tensor& x, const std::vector<Tensor>& params) {
  check_same_float(op, params);
  for (const Tensor& p : params) {
    if (!p.defined()) continue;
    const bool mixed =
        (x.dtype() == DType::f16 || x.dtype() == DType::bf16) && p.dtype() == DType::f32;
    RG_CHECK(p.dtype() == x.dtype() || mixed, op, ": dtype mismatch, input ", x.describe(),
             " vs parameter ", p.describe(),
             " (parameters must have the input's dtype, or f32 for an f16/bf16 input)");
    RG_CHECK(p.device() == x.device(), op, ": device mismatch, input ", x.describe(),
             " vs parameter ", p.describe());
  }
}

void check_grad(std::string_view op, const Tensor& gy, const Tensor& x) {
  check_same_float(op, {x, gy});
  RG_CHECK(gy.shape() == x.shape(), op, ": gradient ", gy.describe(), " does not match input ",
           x.describe());
}

Channels values(const Tensor& t, int64_t c, double fill) {
  return t.defined() ? t.to_vector<double>() : Channels(static_cast<std::size_t>(c), fill);
}

// Per-channel values as a tensor on `device`: the op's device, never the thread's default.
Tensor f64_tensor(const Channels& v, const Device& device) {
  return from_vector(v, {static_cast<int64_t>(v.size())}, {DType::f64, device});
}

int64_t count_of(const Tensor& x) {
  const detail::BnDims d = detail::bn_dims(x);
  return d.n * d.s;
}

Channels invstd_of(const Channels& var, double eps) {
  Channels out(var.size());
  for (std::size_t c = 0; c < var.size(); ++c) out[c] = bn_math::invstd(var[c], eps);
  return out;
}

// Writes per-channel values into a (C) tensor in place, whatever its dtype, stride and device
// (from_vector rounds each value to the dtype once, on the host).
void write_channels(const Tensor& t, const Channels& v) {
  copy_strided(t, from_vector(v, {static_cast<int64_t>(v.size())}, {t.dtype(), t.device()}));
}

// Runs a per-pass kernel (batch_norm_kernels.h) on x's device: f(OnCpu{}) or f(OnCuda{}).
template <class F>
void on_device_of(const Tensor& x, F f) {
  dispatch_device<Kernels::cpu_and_cuda>("batch_norm", x.device(), f);
}

void update_running(const Tensor& running_mean, const Tensor& running_var, const Channels& mean,
                    const Channels& m2, int64_t count, double momentum) {
  RG_CHECK(count > 1, "batch_norm: the running variance needs more than 1 value per channel, got ",
           count);
  if (running_mean.defined()) {
    Channels rm = running_mean.to_vector<double>();
    for (std::size_t c = 0; c < rm.size(); ++c)
      rm[c] = bn_math::running_update(rm[c], mean[c], momentum);
    write_channels(running_mean, rm);
  }
  if (running_var.defined()) {
    Channels rv = running_var.to_vector<double>();
    const double unbiased = 1.0 / static_cast<double>(count - 1);
    for (std::size_t c = 0; c < rv.size(); ++c)
      rv[c] = bn_math::running_var_update(rv[c], m2[c], unbiased, momentum);
    write_channels(running_var, rv);
  }
}

// x, y contiguous; y = (x − mean)·(invstd·w) + b.
Tensor elemt(const Tensor& x, const Channels& w, const Channels& b, const Channels& mean,
             const Channels& invstd) {
  Channels scale(w.size());
  for (std::size_t c = 0; c < w.size(); ++c) scale[c] = invstd[c] * w[c];
  Tensor y = empty_like(x);
  const Device& d = x.device();
  on_device_of(x, [&](auto on) {
    detail::bn_elemt(on, x, y, f64_tensor(mean, d), f64_tensor(scale, d), f64_tensor(b, d));
  });
  return y;
}

// sum_dy = Σ gy, sum_dy_xhat = invstd·Σ gy·(x − mean); gy, x contiguous. With an activation
// (the fused ops' backward, CPU only), gy read through its derivative.
void grad_sums(const Tensor& gy, const Tensor& x, const Channels& mean, const Channels& invstd,
               Channels& sum_dy, Channels& sum_dy_xhat, const detail::BnActGrad& act = {}) {
  const TensorOptions f64{DType::f64, x.device()};
  const Tensor s1 = empty({x.size(1)}, f64), s2 = empty({x.size(1)}, f64);
  if (act.act != detail::BnActivation::none) {
    detail::bn_backward_reduce_cpu(gy, x, mean.data(), s1.data<double>(), s2.data<double>(), act);
  } else {
    on_device_of(x, [&](auto on) {
      detail::bn_backward_reduce(on, gy, x, f64_tensor(mean, x.device()), s1, s2);
    });
  }
  sum_dy = s1.to_vector<double>();
  sum_dy_xhat = s2.to_vector<double>();
  for (std::size_t c = 0; c < mean.size(); ++c) sum_dy_xhat[c] *= invstd[c];
}

// gx = (w·invstd)·(gy − sum_dy/M − x̂·sum_dy_xhat/M); without sums: gx = gy·w·invstd.
Tensor grad_input(const Tensor& gy, const Tensor& x, const Channels& w, const Channels& mean,
                  const Channels& invstd, const Channels* sum_dy, const Channels* sum_dy_xhat,
                  int64_t count, const detail::BnActGrad& act = {}) {
  const std::size_t c_count = mean.size();
  Channels k(c_count), a(c_count, 0.0), b(c_count, 0.0);
  const double inv_m = count > 0 ? 1.0 / static_cast<double>(count) : 0.0;
  const bool train = sum_dy && sum_dy_xhat;
  for (std::size_t c = 0; c < c_count; ++c) {
    const bn_math::GradCoefs coefs = bn_math::grad_coefs(
        w[c], invstd[c], train ? (*sum_dy)[c] : 0.0, train ? (*sum_dy_xhat)[c] : 0.0, inv_m, train);
    k[c] = coefs.k;
    a[c] = coefs.a;
    b[c] = coefs.b;
  }
  Tensor gx = empty_like(x);
  if (act.act != detail::BnActivation::none) {
    detail::bn_backward_elemt_cpu(gy, x, gx, mean.data(), k.data(), a.data(), b.data(), act);
    return gx;
  }
  const Device& d = x.device();
  on_device_of(x, [&](auto on) {
    detail::bn_backward_elemt(on, gy, x, gx, f64_tensor(mean, d), f64_tensor(k, d),
                              f64_tensor(a, d), f64_tensor(b, d));
  });
  return gx;
}

class BatchNormBackward : public Node {
 public:
  BatchNormBackward(Tensor x, Tensor weight, Tensor mean, Tensor invstd, BatchNormMode mode,
                    DType param_dtype, detail::BnActSaved fused)
      : x_(std::move(x)),
        weight_(std::move(weight)),
        mean_(std::move(mean)),
        invstd_(std::move(invstd)),
        fused_(std::move(fused)),
        mode_(mode),
        param_dtype_(param_dtype) {}
  std::string name() const override {
    switch (fused_.act) {
      case detail::BnActivation::relu:
        return "BatchNormReluBackward";
      case detail::BnActivation::gelu:
        return "BatchNormGeluBackward";
      case detail::BnActivation::none:
        break;
    }
    return "BatchNormBackward";
  }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    const detail::BnWants wants{next_edges[0].node != nullptr, next_edges[1].node != nullptr,
                                next_edges[2].node != nullptr};
    const std::string_view op =
        fused_.act == detail::BnActivation::relu   ? "batch_norm_relu_backward"
        : fused_.act == detail::BnActivation::gelu ? "batch_norm_gelu_backward"
                                                   : "batch_norm_backward";
    const detail::BnBackward r =
        dispatch_device<Kernels::cpu_and_cuda>(op, x_.device(), [&](auto on) {
          return detail::bn_backward(on, g[0].contiguous(), x_, weight_, mean_, invstd_,
                                     mode_ == BatchNormMode::train, wants, param_dtype_, fused_);
        });
    return {r.gx, r.gweight, r.gbias};
  }
  void release_saved() override {
    x_ = weight_ = mean_ = invstd_ = fused_.scale = fused_.shift = Tensor();
  }

 private:
  Tensor x_, weight_;     // x contiguous; weight only when x needs a gradient
  Tensor mean_, invstd_;  // (C) f64 on x's device
  // The fused ops only: the activation and (C) f64 the forward's invstd·weight and bias, from
  // which the backward recomputes the activation's input (no saved output).
  detail::BnActSaved fused_;
  BatchNormMode mode_;
  DType param_dtype_;  // of weight and bias
};

}  // namespace

namespace detail {

BnForward bn_forward(OnCpu, const Tensor& xc, const Tensor& weight, const Tensor& bias,
                     const Tensor& running_mean, const Tensor& running_var,
                     const BnConfig& config) {
  const int64_t c = xc.size(1), count = count_of(xc);
  Channels mean, invstd;
  if (config.train) {
    Channels m2(static_cast<std::size_t>(c));
    mean.resize(static_cast<std::size_t>(c));
    bn_stats_cpu(xc, mean.data(), m2.data());
    Channels var(m2.size());
    for (std::size_t i = 0; i < m2.size(); ++i) var[i] = m2[i] / static_cast<double>(count);
    invstd = invstd_of(var, config.eps);
    if (running_mean.defined() || running_var.defined())
      update_running(running_mean, running_var, mean, m2, count, config.momentum);
  } else {
    mean = running_mean.to_vector<double>();
    invstd = invstd_of(running_var.to_vector<double>(), config.eps);
  }
  if (config.act != BnActivation::none) {
    const Channels w = values(weight, c, 1.0), shift = values(bias, c, 0.0);
    Channels scale(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) scale[i] = invstd[i] * w[i];
    Tensor y = empty_like(xc);
    bn_elemt_cpu(xc, y, mean.data(), scale.data(), shift.data(), config.act);
    return {y, f64_tensor(mean, xc.device()), f64_tensor(invstd, xc.device()),
            f64_tensor(scale, xc.device()), f64_tensor(shift, xc.device())};
  }
  Tensor y = elemt(xc, values(weight, c, 1.0), values(bias, c, 0.0), mean, invstd);
  return {y, f64_tensor(mean, xc.device()), f64_tensor(invstd, xc.device()), Tensor(), Tensor()};
}

BnBackward bn_backward(OnCpu, const Tensor& gy, const Tensor& x, const Tensor& weight,
                       const Tensor& mean_t, const Tensor& invstd_t, bool train, BnWants wants,
                       DType param_dtype, const BnActSaved& fused) {
  const Channels mean = mean_t.to_vector<double>(), invstd = invstd_t.to_vector<double>();
  const BnActGrad act = act_grad_of(fused);
  Channels sum_dy, sum_dy_xhat;
  if (wants.weight || wants.bias || (train && wants.x))
    grad_sums(gy, x, mean, invstd, sum_dy, sum_dy_xhat, act);
  BnBackward r;
  if (wants.x) {
    const Channels w = values(weight, x.size(1), 1.0);
    r.gx = train ? grad_input(gy, x, w, mean, invstd, &sum_dy, &sum_dy_xhat, count_of(x), act)
                 : grad_input(gy, x, w, mean, invstd, nullptr, nullptr, count_of(x), act);
  }
  // In the parameters' dtype: f32 in mixed mode, where the f64 sums are rounded only once.
  if (wants.weight) r.gweight = f64_tensor(sum_dy_xhat, x.device()).to(param_dtype);
  if (wants.bias) r.gbias = f64_tensor(sum_dy, x.device()).to(param_dtype);
  return r;
}

}  // namespace detail

namespace {

void check_batch_norm(std::string_view op, const Tensor& x, const Tensor& weight,
                      const Tensor& bias, const Tensor& running_mean, const Tensor& running_var,
                      BatchNormMode mode, double eps) {
  check_input(op, x);
  check_params(op, x, {weight, bias, running_mean, running_var});
  check_channels(op, "weight", weight, x);
  check_channels(op, "bias", bias, x);
  check_channels(op, "running_mean", running_mean, x);
  check_channels(op, "running_var", running_var, x);
  RG_CHECK(eps >= 0, op, ": eps must be >= 0, got ", eps);
  if (mode == BatchNormMode::train) {
    RG_CHECK(count_of(x) > 1, op,
             ": expected more than 1 value per channel when training, got input ", x.describe());
  } else {
    RG_CHECK(running_mean.defined() && running_var.defined(), op,
             ": eval mode needs running_mean and running_var, got ", running_mean.describe(),
             " and ", running_var.describe(), " for input ", x.describe());
  }
}

// batch_norm, or batch_norm_relu / batch_norm_gelu with `activation` relu / gelu (both devices'
// kernels fuse the activation into batch_norm's passes: bn_elemt_cpu, elemt_kernel). Records the
// backward node when a gradient is wanted; with an activation the node keeps f.scale and
// f.shift, from which its backward recomputes the activation's input (no weight needed:
// scale = invstd·weight, as used).
Tensor batch_norm_with(std::string_view op, detail::BnActivation activation, const Tensor& x,
                       const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                       const Tensor& running_var, BatchNormMode mode, double momentum, double eps) {
  check_batch_norm(op, x, weight, bias, running_mean, running_var, mode, eps);
  // A channels-last x runs as its (N·H·W, C) rows, no conversion either way
  // (batch_norm_channels_last.h).
  if (detail::bn_runs_on_rows(x))
    return detail::bn_over_rows(x, [&](const Tensor& rows) {
      return batch_norm_with(op, activation, rows, weight, bias, running_mean, running_var, mode,
                             momentum, eps);
    });
  const Tensor xc = x.detach().contiguous();
  const detail::BnConfig config{mode == BatchNormMode::train, momentum, eps, activation};
  detail::BnForward f = dispatch_device<Kernels::cpu_and_cuda>(op, x.device(), [&](auto on) {
    return detail::bn_forward(on, xc, weight, bias, running_mean, running_var, config);
  });
  if (needs_grad({x, weight, bias})) {
    const bool fused = activation != detail::BnActivation::none;
    auto node = std::make_shared<BatchNormBackward>(
        saved(xc), x.requires_grad() ? saved(weight) : Tensor(), std::move(f.mean),
        std::move(f.invstd), mode,
        weight.defined() ? weight.dtype()
        : bias.defined() ? bias.dtype()
                         : x.dtype(),
        fused ? detail::BnActSaved{activation, std::move(f.scale), std::move(f.shift)}
              : detail::BnActSaved{});
    record(node, {x, weight, bias}, {&f.y});
  }
  return f.y;
}

}  // namespace

Tensor batch_norm_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, BatchNormMode mode,
                       double momentum, double eps) {
  return batch_norm_with("batch_norm_relu", detail::BnActivation::relu, x, weight, bias,
                         running_mean, running_var, mode, momentum, eps);
}

Tensor batch_norm_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, BatchNormMode mode,
                       double momentum, double eps) {
  return batch_norm_with("batch_norm_gelu", detail::BnActivation::gelu, x, weight, bias,
                         running_mean, running_var, mode, momentum, eps);
}

Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, BatchNormMode mode,
                  double momentum, double eps) {
  return batch_norm_with("batch_norm", detail::BnActivation::none, x, weight, bias, running_mean,
                         running_var, mode, momentum, eps);
}

void batch_norm_count_batch(const Tensor& num_batches_tracked) {
  constexpr std::string_view op = "batch_norm_count_batch";
  RG_CHECK(num_batches_tracked.defined() && num_batches_tracked.dtype() == DType::i64 &&
               num_batches_tracked.is_contiguous(),
           op, ": num_batches_tracked must be a contiguous i64 tensor, got ",
           num_batches_tracked.describe());
  dispatch_device<Kernels::cpu_and_cuda>(op, num_batches_tracked.device(), [&](auto on) {
    detail::bn_count(on, num_batches_tracked);
  });
}

// ---- pieces for SyncBatchNorm --------------------------------------------------------------

// The pieces run their passes over x on x's device; the per-channel arithmetic between them is
// on the host (C values, read back: SyncBatchNorm exchanges them between ranks anyway).
BatchNormStats batch_norm_stats(const Tensor& x) {
  check_input("batch_norm_stats", x);
  const TensorOptions f64{DType::f64, x.device()};
  BatchNormStats stats{count_of(x), zeros({x.size(1)}, f64), zeros({x.size(1)}, f64)};
  if (stats.count == 0) return stats;  // an empty shard: zeros, no NaN
  const Tensor xc = x.detach().contiguous();
  on_device_of(x, [&](auto on) { detail::bn_stats(on, xc, stats.mean, stats.m2); });
  return stats;
}

BatchNormStats batch_norm_combine_stats(const std::vector<BatchNormStats>& parts) {
  RG_CHECK(!parts.empty(), "batch_norm_combine_stats: no statistics to combine");
  const Shape shape = parts[0].mean.shape();
  int64_t count = 0;
  Channels mean(static_cast<std::size_t>(numel_of(shape)), 0.0), m2(mean.size(), 0.0);
  for (const BatchNormStats& p : parts) {
    RG_CHECK(p.count >= 0 && p.mean.shape() == shape && p.m2.shape() == shape,
             "batch_norm_combine_stats: parts disagree: mean ", p.mean.describe(), ", m2 ",
             p.m2.describe(), ", count ", p.count, " vs channels ", shape_str(shape));
    if (p.count == 0) continue;  // an empty shard (a rank with no samples) adds nothing
    const Channels pm = p.mean.to_vector<double>(), pm2 = p.m2.to_vector<double>();
    // Chan et al.: merging (n_a, μ_a, M2_a) with (n_b, μ_b, M2_b), δ = μ_b − μ_a:
    //   μ = μ_a + δ·n_b/n,  M2 = M2_a + M2_b + δ²·n_a·n_b/n — no cancellation, any sizes.
    const double na = static_cast<double>(count), nb = static_cast<double>(p.count);
    const double n = na + nb;
    for (std::size_t c = 0; c < mean.size(); ++c) {
      const double delta = pm[c] - mean[c];
      mean[c] += delta * nb / n;
      m2[c] += pm2[c] + delta * delta * na * nb / n;
    }
    count += p.count;
  }
  const Device device = parts[0].mean.device();
  return {count, f64_tensor(mean, device), f64_tensor(m2, device)};
}

Tensor batch_norm_invstd(const BatchNormStats& stats, double eps) {
  RG_CHECK(stats.count > 0 && stats.m2.defined(),
           "batch_norm_invstd: statistics of an empty batch (count ", stats.count, ")");
  RG_CHECK(eps >= 0, "batch_norm_invstd: eps must be >= 0, got ", eps);
  Channels var = stats.m2.to_vector<double>();
  for (double& v : var) v /= static_cast<double>(stats.count);
  return f64_tensor(invstd_of(var, eps), stats.m2.device());
}

void batch_norm_update_running_stats(const Tensor& running_mean, const Tensor& running_var,
                                     const BatchNormStats& stats, double momentum) {
  constexpr std::string_view op = "batch_norm_update_running_stats";
  for (const Tensor* t : {&running_mean, &running_var}) {
    if (!t->defined()) continue;
    RG_CHECK(is_floating(t->dtype()) && t->shape() == stats.mean.shape(), op, ": running stat ",
             t->describe(), " does not match the statistics ", stats.mean.describe());
  }
  update_running(running_mean, running_var, stats.mean.to_vector<double>(),
                 stats.m2.to_vector<double>(), stats.count, momentum);
}

Tensor batch_norm_elemt(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        const Tensor& mean, const Tensor& invstd) {
  constexpr std::string_view op = "batch_norm_elemt";
  check_input(op, x);
  check_params(op, x, {weight, bias});
  check_channels(op, "weight", weight, x);
  check_channels(op, "bias", bias, x);
  RG_CHECK(mean.defined() && invstd.defined(), op, ": mean and invstd are required");
  check_channels(op, "mean", mean, x);
  check_channels(op, "invstd", invstd, x);
  const int64_t c = x.size(1);
  return elemt(x.detach().contiguous(), values(weight, c, 1.0), values(bias, c, 0.0),
               mean.to_vector<double>(), invstd.to_vector<double>());
}

BatchNormGradSums batch_norm_backward_reduce(const Tensor& gy, const Tensor& x, const Tensor& mean,
                                             const Tensor& invstd) {
  constexpr std::string_view op = "batch_norm_backward_reduce";
  check_input(op, x);
  check_grad(op, gy, x);
  RG_CHECK(mean.defined() && invstd.defined(), op, ": mean and invstd are required");
  check_channels(op, "mean", mean, x);
  check_channels(op, "invstd", invstd, x);
  Channels sum_dy, sum_dy_xhat;
  grad_sums(gy.detach().contiguous(), x.detach().contiguous(), mean.to_vector<double>(),
            invstd.to_vector<double>(), sum_dy, sum_dy_xhat);
  return {f64_tensor(sum_dy, x.device()), f64_tensor(sum_dy_xhat, x.device())};
}

Tensor batch_norm_backward_elemt(const Tensor& gy, const Tensor& x, const Tensor& weight,
                                 const Tensor& mean, const Tensor& invstd,
                                 const BatchNormGradSums& sums, int64_t count) {
  constexpr std::string_view op = "batch_norm_backward_elemt";
  check_input(op, x);
  check_grad(op, gy, x);
  check_params(op, x, {weight});
  check_channels(op, "weight", weight, x);
  RG_CHECK(mean.defined() && invstd.defined(), op, ": mean and invstd are required");
  check_channels(op, "mean", mean, x);
  check_channels(op, "invstd", invstd, x);
  RG_CHECK(sums.sum_dy.defined() == sums.sum_dy_xhat.defined(), op,
           ": give both sums (train) or neither (eval)");
  const int64_t c = x.size(1);
  const Tensor gyc = gy.detach().contiguous(), xc = x.detach().contiguous();
  const Channels w = values(weight, c, 1.0), m = mean.to_vector<double>(),
                 is = invstd.to_vector<double>();
  if (!sums.sum_dy.defined()) return grad_input(gyc, xc, w, m, is, nullptr, nullptr, count);
  check_channels(op, "sum_dy", sums.sum_dy, x);
  check_channels(op, "sum_dy_xhat", sums.sum_dy_xhat, x);
  RG_CHECK(count > 0, op, ": count must be > 0, got ", count);
  const Channels s1 = sums.sum_dy.to_vector<double>(), s2 = sums.sum_dy_xhat.to_vector<double>();
  return grad_input(gyc, xc, w, m, is, &s1, &s2, count);
}

}  // namespace rg
