#include "optim/adamw.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "optim/param_update.h"
#include "optim/update_items.h"

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
  NoGradGuard no_grad;  // an update is not part of any graph
  std::vector<detail::AdamWItem> items;
  std::vector<detail::WorkingView> views;
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
      const int64_t t = ++s.step;
      // Scalars in double, as PyTorch computes them in Python floats.
      const double bias1 = 1 - std::pow(o.beta1, static_cast<double>(t));
      const double bias2 = 1 - std::pow(o.beta2, static_cast<double>(t));
      const detail::AdamWScalars scalars{o.lr,  o.weight_decay, o.beta1,          o.beta2,
                                         o.eps, o.lr / bias1,   std::sqrt(bias2), amsgrad};
      views.push_back(detail::working_view(param));
      items.push_back({views.back().work, grad.contiguous(), s.buffers["exp_avg"],
                       s.buffers["exp_avg_sq"], amsgrad ? s.buffers["max_exp_avg_sq"] : Tensor(),
                       static_cast<int64_t>(i), scalars});
    }
  }
  detail::adamw_step(items);  // one fused step per device
  for (const auto& v : views) detail::write_back(v);
}

std::unique_ptr<Optimizer> AdamW::over(std::vector<std::vector<Tensor>> groups) const {
  RG_CHECK(groups.size() == groups_.size(), "AdamW::over: ", groups.size(), " group(s) for ",
           groups_.size());
  std::vector<ParamGroup<AdamWOptions>> made;
  for (std::size_t g = 0; g < groups.size(); ++g)
    made.push_back({std::move(groups[g]), groups_[g].options});
  return std::make_unique<AdamW>(std::move(made));
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
