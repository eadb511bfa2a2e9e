#include "optim/adamw.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "optim/param_update.h"

namespace rg {

AdamW::AdamW(std::vector<ParamGroup<AdamWOptions>> groups)
    : GroupedOptimizer("AdamW", std::move(groups)) {
  for (const auto& group : groups_) validate(group.options);
  init_state();
}

void AdamW::validate(const AdamWOptions& o) const {
  // `!(x >= 0)` also rejects NaN.
  RG_CHECK(o.lr >= 0, "AdamW: invalid learning rate ", o.lr, " (must be >= 0)");
  RG_CHECK(o.eps >= 0, "AdamW: invalid eps ", o.eps, " (must be >= 0)");
  RG_CHECK(o.beta1 >= 0 && o.beta1 < 1, "AdamW: invalid beta1 ", o.beta1, " (must be in [0, 1))");
  RG_CHECK(o.beta2 >= 0 && o.beta2 < 1, "AdamW: invalid beta2 ", o.beta2, " (must be in [0, 1))");
  RG_CHECK(o.weight_decay >= 0, "AdamW: invalid weight_decay ", o.weight_decay, " (must be >= 0)");
}

void AdamW::step() {
  std::size_t index = 0;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    const auto& group = groups_[gi];
    const AdamWOptions& o = group.options;
    const bool amsgrad = o.amsgrad == AmsGrad::on;
    for (const Tensor& param : group.params) {
      const std::size_t i = index++;
      const Tensor grad = param.grad();
      if (!grad.defined()) continue;
      check_grad(i, param, grad);
      ParamState& s = state(i);
      for (const std::string& name : state_names(gi))
        if (!s.buffers.count(name)) s.buffers[name] = zeros_like(param);
      const Tensor m = s.buffers["exp_avg"], v = s.buffers["exp_avg_sq"];
      const Tensor vmax = amsgrad ? s.buffers["max_exp_avg_sq"] : Tensor();
      const int64_t t = ++s.step;
      // Scalars in double, as PyTorch computes them in Python floats.
      const double bias1 = 1 - std::pow(o.beta1, static_cast<double>(t));
      const double bias2 = 1 - std::pow(o.beta2, static_cast<double>(t));
      const double step_size = o.lr / bias1;
      const double bias2_sqrt = std::sqrt(bias2);
      detail::update_param(param, grad, [&](const Tensor& p, const Tensor& g) {
        dispatch_floating(p.dtype(), "AdamW.step", [&](auto tag) {
          using T = decltype(tag);
          using C = compute_t<T>;
          T* pd = p.data<T>();
          const T* gd = g.data<T>();
          T* md = m.data<T>();
          T* vd = v.data<T>();
          T* xd = amsgrad ? vmax.data<T>() : nullptr;
          const C decay = static_cast<C>(1 - o.lr * o.weight_decay);
          const C w1 = static_cast<C>(1 - o.beta1), b2 = static_cast<C>(o.beta2);
          const C w2 = static_cast<C>(1 - o.beta2), eps = static_cast<C>(o.eps);
          const C c2 = static_cast<C>(bias2_sqrt), neg_step = static_cast<C>(-step_size);
          parallel_for(p.numel(), detail::kUpdateGrain, [&](int64_t b, int64_t e) {
            for (int64_t k = b; k < e; ++k) {
              C pk = static_cast<C>(pd[k]);
              const C gk = static_cast<C>(gd[k]);
              if (o.weight_decay != 0) pk = pk * decay;
              // torch.lerp's formula for weights below 0.5 (always, for β1 > 0.5); for larger
              // weights it interpolates from the other end.
              C mk = static_cast<C>(md[k]);
              mk = w1 < C(0.5) ? mk + w1 * (gk - mk) : gk - (gk - mk) * (C(1) - w1);
              C vk = static_cast<C>(vd[k]) * b2;
              vk = vk + w2 * gk * gk;
              md[k] = static_cast<T>(mk);
              vd[k] = static_cast<T>(vk);
              C denom_v = vk;
              if (xd) {
                // torch.maximum: NaN wins.
                const C xk = static_cast<C>(xd[k]);
                denom_v = (std::isnan(vk) || vk > xk) ? vk : xk;
                xd[k] = static_cast<T>(denom_v);
              }
              const C denom = std::sqrt(denom_v) / c2 + eps;
              pd[k] = static_cast<T>(pk + neg_step * mk / denom);
            }
          });
        });
      });
    }
  }
}

nlohmann::json AdamW::options_json(std::size_t group) const {
  const AdamWOptions& o = groups_.at(group).options;
  return {{"lr", o.lr},
          {"betas", {o.beta1, o.beta2}},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"amsgrad", o.amsgrad == AmsGrad::on}};
}

void AdamW::load_options_json(std::size_t group, const nlohmann::json& j) {
  AdamWOptions o;
  o.lr = j.at("lr").get<double>();
  const auto betas = j.at("betas").get<std::vector<double>>();
  RG_CHECK(betas.size() == 2, "AdamW: 'betas' must hold two numbers, got ", betas.size());
  o.beta1 = betas[0];
  o.beta2 = betas[1];
  o.eps = j.at("eps").get<double>();
  o.weight_decay = j.at("weight_decay").get<double>();
  o.amsgrad = j.at("amsgrad").get<bool>() ? AmsGrad::on : AmsGrad::off;
  set_options(group, o);
}

std::vector<std::string> AdamW::state_names(std::size_t group) const {
  if (groups_.at(group).options.amsgrad == AmsGrad::on)
    return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
}

}  // namespace rg
