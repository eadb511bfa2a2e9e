#include "optim/sgd.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "optim/param_update.h"

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
  std::size_t index = 0;
  for (const auto& group : groups_) {
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
      const Tensor buf = o.momentum != 0 ? s.buffers["momentum_buffer"] : Tensor();
      detail::update_param(param, grad, [&](const Tensor& p, const Tensor& g) {
        dispatch_floating(p.dtype(), "SGD.step", [&](auto tag) {
          using T = decltype(tag);
          using C = compute_t<T>;
          T* pd = p.data<T>();
          const T* gd = g.data<T>();
          T* bd = buf.defined() ? buf.data<T>() : nullptr;
          // Scalars rounded to the compute type, as PyTorch does for a float tensor's alpha.
          const C lr = static_cast<C>(o.lr), wd = static_cast<C>(o.weight_decay);
          const C mom = static_cast<C>(o.momentum);
          const C keep = static_cast<C>(1 - o.dampening);
          const bool nesterov = o.nesterov == Nesterov::on;
          parallel_for(p.numel(), detail::kUpdateGrain, [&](int64_t b, int64_t e) {
            for (int64_t k = b; k < e; ++k) {
              const C pk = static_cast<C>(pd[k]);
              C d = static_cast<C>(gd[k]);
              if (o.weight_decay != 0) d = d + wd * pk;
              if (bd) {
                C m = d;
                if (!first) {
                  m = static_cast<C>(bd[k]) * mom;
                  m = m + keep * d;
                }
                bd[k] = static_cast<T>(m);
                d = nesterov ? d + mom * m : m;
              }
              pd[k] = static_cast<T>(pk - lr * d);
            }
          });
        });
      });
    }
  }
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
