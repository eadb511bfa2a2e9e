#include "optim/sgd.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "optim/param_update.h"
#include "optim/update_items.h"

namespace rg {

SGD::SGD(std::vector<ParamGroup<SGDOptions>> groups) : GroupedOptimizer("SGD", std::move(groups)) {
  for (const auto& group : groups_) validate(group.options);
  init_state();
}

void SGD::validate(const SGDOptions& o) const {
  // `!(x >= 0)` also rejects NaN.
  RG_CHECK(o.lr >= 0, "SGD: invalid learning rate ", o.lr, " (must be >= 0)");
  RG_CHECK(o.momentum >= 0, "SGD: invalid momentum ", o.momentum, " (must be >= 0)");
  RG_CHECK(o.weight_decay >= 0, "SGD: invalid weight_decay ", o.weight_decay, " (must be >= 0)");
  RG_CHECK(std::isfinite(o.dampening), "SGD: invalid dampening ", o.dampening);
  RG_CHECK(o.nesterov == Nesterov::off || (o.momentum > 0 && o.dampening == 0),
           "SGD: Nesterov momentum requires momentum > 0 and dampening = 0, got momentum ",
           o.momentum, " and dampening ", o.dampening);
}

void SGD::step() {
  NoGradGuard no_grad;  // an update is not part of any graph
  std::vector<detail::SgdItem> items;
  std::vector<detail::WorkingView> views;
  std::size_t index = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const auto& group = groups_[g];
    const SGDOptions& o = group.options;
    for (const Tensor& param : group.params) {
      const std::size_t i = index++;
      const Tensor grad = param.grad();
      if (!grad.defined()) continue;
      check_grad(i, param, grad);
      ParamState& s = state(i);
      // PyTorch starts the buffer at the (weight-decayed) gradient itself rather than at
      // momentum·0 + (1 − dampening)·g: no dampening on the first step.
      const bool first = o.momentum != 0 && !s.buffers.count("momentum_buffer");
      if (first) s.buffers["momentum_buffer"] = empty_like(param);
      const detail::SgdScalars scalars{o.lr,
                                       o.weight_decay,
                                       o.momentum,
                                       o.dampening,
                                       o.nesterov == Nesterov::on,
                                       o.momentum != 0,
                                       first,
                                       lr_on_device(g)};
      views.push_back(detail::working_view(param));
      items.push_back({views.back().work, grad.contiguous(),
                       o.momentum != 0 ? s.buffers["momentum_buffer"] : Tensor(),
                       static_cast<int64_t>(i), scalars});
    }
  }
  detail::sgd_step(items);  // one fused step per device
  for (const auto& v : views) detail::write_back(v);
}

std::unique_ptr<Optimizer> SGD::over(std::vector<std::vector<Tensor>> groups) const {
  RG_CHECK(groups.size() == groups_.size(), "SGD::over: ", groups.size(), " group(s) for ",
           groups_.size());
  std::vector<ParamGroup<SGDOptions>> made;
  for (std::size_t g = 0; g < groups.size(); ++g)
    made.push_back({std::move(groups[g]), groups_[g].options});
  return std::make_unique<SGD>(std::move(made));
}

nlohmann::json SGD::options_json(std::size_t group) const {
  const SGDOptions& o = groups_.at(group).options;
  return {{"lr", o.lr},
          {"momentum", o.momentum},
          {"dampening", o.dampening},
          {"weight_decay", o.weight_decay},
          {"nesterov", o.nesterov == Nesterov::on}};
}

void SGD::load_options_json(std::size_t group, const nlohmann::json& j) {
  SGDOptions o;
  o.lr = j.at("lr").get<double>();
  o.momentum = j.at("momentum").get<double>();
  o.dampening = j.at("dampening").get<double>();
  o.weight_decay = j.at("weight_decay").get<double>();
  o.nesterov = j.at("nesterov").get<bool>() ? Nesterov::on : Nesterov::off;
  set_options(group, o);
}

std::vector<std::string> SGD::state_names(std::size_t group) const {
  if (groups_.at(group).options.momentum == 0) return {};
  return {"momentum_buffer"};
}

}  // namespace rg
