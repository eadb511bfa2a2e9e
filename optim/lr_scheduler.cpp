#include "optim/lr_scheduler.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace rg {

// ---- LRScheduler ---------------------------------------------------------------------------
LRScheduler::LRScheduler(std::string name, Optimizer& optimizer)
    : name_(std::move(name)), optimizer_(&optimizer) {
  for (std::size_t g = 0; g < optimizer.num_groups(); ++g) base_lrs_.push_back(optimizer.lr(g));
}

void LRScheduler::apply() {
  // All lrs first: a schedule that throws (OneCycleLR past its end) changes nothing.
  std::vector<double> lrs;
  for (std::size_t g = 0; g < base_lrs_.size(); ++g) lrs.push_back(lr_at(step_, g));
  for (std::size_t g = 0; g < lrs.size(); ++g) optimizer_->set_lr(g, lrs[g]);
}

void LRScheduler::step() {
  ++step_;
  try {
    apply();
  } catch (...) {
    --step_;
    throw;
  }
}

std::vector<double> LRScheduler::get_lr() const {
  std::vector<double> lrs;
  for (std::size_t g = 0; g < base_lrs_.size(); ++g) lrs.push_back(lr_at(step_, g));
  return lrs;
}

nlohmann::json LRScheduler::to_json() const {
  return {
      {"type", name_}, {"last_step", step_}, {"base_lrs", base_lrs_}, {"options", options_json()}};
}

void LRScheduler::from_json(const nlohmann::json& j) {
  const std::string type = j.at("type").get<std::string>();
  RG_CHECK(type == name_, "the checkpoint holds a '", type, "' scheduler, not '", name_, "'");
  const int64_t step = j.at("last_step").get<int64_t>();
  RG_CHECK(step >= 0, "'last_step' must be >= 0, got ", step);
  const std::vector<double> base_lrs = j.at("base_lrs").get<std::vector<double>>();
  RG_CHECK(base_lrs.size() == optimizer_->num_groups(), "the checkpoint has base lrs for ",
           base_lrs.size(), " parameter groups, the optimizer has ", optimizer_->num_groups());
  for (double lr : base_lrs) RG_CHECK(lr >= 0, "invalid base lr ", lr, " (must be >= 0)");
  load_options_json(j.at("options"));
  step_ = step;
  base_lrs_ = base_lrs;
}

std::map<std::string, std::string> LRScheduler::state_dict() const {
  return {{"lr_scheduler", to_json().dump()}};
}

void LRScheduler::load_state_dict(const std::map<std::string, std::string>& metadata) {
  const std::string what = name_ + ".load_state_dict: ";
  auto it = metadata.find("lr_scheduler");
  RG_CHECK(it != metadata.end(), what, "metadata 'lr_scheduler' is missing");
  const nlohmann::json old = to_json();
  try {
    from_json(nlohmann::json::parse(it->second));
    apply();
  } catch (const std::exception& e) {
    from_json(old);
    if (dynamic_cast<const Error*>(&e)) fail(what, e.what());
    fail(what, "malformed 'lr_scheduler' metadata: ", e.what());
  }
}

// ---- MultiStepLR ---------------------------------------------------------------------------
MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler("MultiStepLR", optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  validate(milestones_, gamma_);
  std::sort(milestones_.begin(), milestones_.end());
  apply();
}

void MultiStepLR::validate(const std::vector<int64_t>& milestones, double gamma) {
  for (int64_t m : milestones) RG_CHECK(m >= 0, "MultiStepLR: milestones must be >= 0, got ", m);
  RG_CHECK(std::isfinite(gamma) && gamma >= 0, "MultiStepLR: invalid gamma ", gamma,
           " (must be finite and >= 0)");
}

double MultiStepLR::lr_at(int64_t step, std::size_t group) const {
  const auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), step) - milestones_.begin();
  return base_lrs_.at(group) * std::pow(gamma_, static_cast<double>(passed));
}

nlohmann::json MultiStepLR::options_json() const {
  return {{"milestones", milestones_}, {"gamma", gamma_}};
}

void MultiStepLR::load_options_json(const nlohmann::json& j) {
  std::vector<int64_t> milestones = j.at("milestones").get<std::vector<int64_t>>();
  const double gamma = j.at("gamma").get<double>();
  validate(milestones, gamma);
  std::sort(milestones.begin(), milestones.end());
  milestones_ = std::move(milestones);
  gamma_ = gamma;
}

// ---- CosineAnnealingLR ---------------------------------------------------------------------
CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler("CosineAnnealingLR", optimizer), T_max_(T_max), eta_min_(eta_min) {
  RG_CHECK(T_max > 0, "CosineAnnealingLR: T_max must be > 0, got ", T_max);
  RG_CHECK(std::isfinite(eta_min) && eta_min >= 0, "CosineAnnealingLR: invalid eta_min ", eta_min,
           " (must be finite and >= 0)");
  apply();
}

double CosineAnnealingLR::lr_at(int64_t step, std::size_t group) const {
  const double phase = std::numbers::pi * static_cast<double>(step) / static_cast<double>(T_max_);
  return eta_min_ + (base_lrs_.at(group) - eta_min_) * (1 + std::cos(phase)) / 2;
}

nlohmann::json CosineAnnealingLR::options_json() const {
  return {{"T_max", T_max_}, {"eta_min", eta_min_}};
}

void CosineAnnealingLR::load_options_json(const nlohmann::json& j) {
  const int64_t T_max = j.at("T_max").get<int64_t>();
  const double eta_min = j.at("eta_min").get<double>();
  RG_CHECK(T_max > 0, "CosineAnnealingLR: T_max must be > 0, got ", T_max);
  RG_CHECK(std::isfinite(eta_min) && eta_min >= 0, "CosineAnnealingLR: invalid eta_min ", eta_min);
  T_max_ = T_max;
  eta_min_ = eta_min;
}

// ---- LinearLR ------------------------------------------------------------------------------
LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   int64_t total_steps)
    : LRScheduler("LinearLR", optimizer),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_steps_(total_steps) {
  validate(start_factor, end_factor, total_steps);
  apply();
}

void LinearLR::validate(double start_factor, double end_factor, int64_t total_steps) {
  RG_CHECK(std::isfinite(start_factor) && start_factor >= 0 && std::isfinite(end_factor) &&
               end_factor >= 0,
           "LinearLR: start_factor and end_factor must be finite and >= 0, got ", start_factor,
           " and ", end_factor);
  RG_CHECK(total_steps > 0, "LinearLR: total_steps must be > 0, got ", total_steps);
}

double LinearLR::lr_at(int64_t step, std::size_t group) const {
  const double t =
      static_cast<double>(std::min(step, total_steps_)) / static_cast<double>(total_steps_);
  return base_lrs_.at(group) * (start_factor_ + (end_factor_ - start_factor_) * t);
}

nlohmann::json LinearLR::options_json() const {
  return {
      {"start_factor", start_factor_}, {"end_factor", end_factor_}, {"total_steps", total_steps_}};
}

void LinearLR::load_options_json(const nlohmann::json& j) {
  const double start_factor = j.at("start_factor").get<double>();
  const double end_factor = j.at("end_factor").get<double>();
  const int64_t total_steps = j.at("total_steps").get<int64_t>();
  validate(start_factor, end_factor, total_steps);
  start_factor_ = start_factor;
  end_factor_ = end_factor;
  total_steps_ = total_steps;
}

// ---- OneCycleLR ----------------------------------------------------------------------------
OneCycleLR::OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs, int64_t total_steps,
                       OneCycleOptions options)
    : LRScheduler("OneCycleLR", optimizer), total_steps_(total_steps), options_(options) {
  validate(total_steps, options);
  RG_CHECK(max_lrs.size() == 1 || max_lrs.size() == optimizer.num_groups(),
           "OneCycleLR: expected 1 or ", optimizer.num_groups(),
           " max_lr values (one per group), got ", max_lrs.size());
  if (max_lrs.size() == 1) max_lrs.assign(optimizer.num_groups(), max_lrs[0]);
  for (double lr : max_lrs)
    RG_CHECK(std::isfinite(lr) && lr >= 0, "OneCycleLR: invalid max_lr ", lr);
  base_lrs_ = std::move(max_lrs);
  apply();
}

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps,
                       OneCycleOptions options)
    : OneCycleLR(optimizer, std::vector<double>{max_lr}, total_steps, options) {}

void OneCycleLR::validate(int64_t total_steps, const OneCycleOptions& o) {
  RG_CHECK(total_steps > 0, "OneCycleLR: total_steps must be > 0, got ", total_steps);
  RG_CHECK(o.pct_start >= 0 && o.pct_start <= 1, "OneCycleLR: pct_start must be in [0, 1], got ",
           o.pct_start);
  RG_CHECK(std::isfinite(o.div_factor) && o.div_factor > 0, "OneCycleLR: invalid div_factor ",
           o.div_factor, " (must be > 0)");
  RG_CHECK(std::isfinite(o.final_div_factor) && o.final_div_factor > 0,
           "OneCycleLR: invalid final_div_factor ", o.final_div_factor, " (must be > 0)");
}

double OneCycleLR::lr_at(int64_t step, std::size_t group) const {
  RG_CHECK(step >= 0 && step <= total_steps_, "OneCycleLR: step ", step,
           " is outside the cycle of total_steps = ", total_steps_,
           " (valid steps: 0 .. total_steps)");
  const double max_lr = base_lrs_.at(group);
  const double initial_lr = max_lr / options_.div_factor;
  const double min_lr = initial_lr / options_.final_div_factor;
  // Phase ends as PyTorch places them (fractional for phase 1), and its rule: a step belongs
  // to the first phase whose end it does not pass, else to the last phase.
  const double end1 = options_.pct_start * static_cast<double>(total_steps_) - 1;
  const double end2 = static_cast<double>(total_steps_ - 1);
  const double s = static_cast<double>(step);
  const bool rising = s <= end1;
  const double begin = rising ? 0.0 : end1, end = rising ? end1 : end2;
  RG_CHECK(end != begin, "OneCycleLR: step ", step, " falls in a phase of zero length (pct_start ",
           options_.pct_start, ", total_steps ", total_steps_,
           "); choose pct_start so that neither phase is empty");
  double pct = (s - begin) / (end - begin);
  // At step total_steps (after the last update of a total_steps-iteration loop) PyTorch
  // extrapolates the last phase past its end. Cosine stays above min_lr there (kept as in
  // PyTorch); linear can go below 0, which no optimizer accepts, so it holds min_lr instead.
  if (options_.anneal == Anneal::linear) pct = std::min(pct, 1.0);
  const double from = rising ? initial_lr : max_lr, to = rising ? max_lr : min_lr;
  if (options_.anneal == Anneal::linear) return (to - from) * pct + from;
  return to + (from - to) / 2.0 * (std::cos(std::numbers::pi * pct) + 1);
}

nlohmann::json OneCycleLR::options_json() const {
  return {{"total_steps", total_steps_},
          {"pct_start", options_.pct_start},
          {"anneal", options_.anneal == Anneal::cos ? "cos" : "linear"},
          {"div_factor", options_.div_factor},
          {"final_div_factor", options_.final_div_factor}};
}

void OneCycleLR::load_options_json(const nlohmann::json& j) {
  OneCycleOptions o;
  const int64_t total_steps = j.at("total_steps").get<int64_t>();
  o.pct_start = j.at("pct_start").get<double>();
  const std::string anneal = j.at("anneal").get<std::string>();
  RG_CHECK(anneal == "cos" || anneal == "linear", "OneCycleLR: unknown anneal '", anneal, "'");
  o.anneal = anneal == "cos" ? Anneal::cos : Anneal::linear;
  o.div_factor = j.at("div_factor").get<double>();
  o.final_div_factor = j.at("final_div_factor").get<double>();
  validate(total_steps, o);
  total_steps_ = total_steps;
  options_ = o;
}

// ---- LinearWarmup --------------------------------------------------------------------------
LinearWarmup::LinearWarmup(Optimizer& optimizer, std::unique_ptr<LRScheduler> after,
                           int64_t warmup_steps, double start_factor)
    : LRScheduler("LinearWarmup", optimizer),
      after_(std::move(after)),
      warmup_steps_(warmup_steps),
      start_factor_(start_factor) {
  validate(warmup_steps, start_factor);
  if (after_) {
    RG_CHECK(&after_->optimizer() == &optimizer, "LinearWarmup: the wrapped ", after_->name(),
             " drives another optimizer");
    RG_CHECK(after_->last_step() == 0, "LinearWarmup: the wrapped ", after_->name(),
             " has already taken ", after_->last_step(), " steps; wrap a fresh scheduler");
    // Ramp up to where the wrapped schedule starts.
    for (std::size_t g = 0; g < base_lrs_.size(); ++g) base_lrs_[g] = after_->lr_at(0, g);
  }
  apply();
}

void LinearWarmup::validate(int64_t warmup_steps, double start_factor) {
  RG_CHECK(warmup_steps >= 0, "LinearWarmup: warmup_steps must be >= 0, got ", warmup_steps);
  RG_CHECK(start_factor >= 0 && start_factor <= 1,
           "LinearWarmup: start_factor must be in [0, 1], got ", start_factor);
}

double LinearWarmup::lr_at(int64_t step, std::size_t group) const {
  if (step < warmup_steps_) {
    const double t = static_cast<double>(step) / static_cast<double>(warmup_steps_);
    return base_lrs_.at(group) * (start_factor_ + (1 - start_factor_) * t);
  }
  return after_ ? after_->lr_at(step - warmup_steps_, group) : base_lrs_.at(group);
}

nlohmann::json LinearWarmup::options_json() const {
  return {{"warmup_steps", warmup_steps_},
          {"start_factor", start_factor_},
          {"after", after_ ? after_->to_json() : nlohmann::json(nullptr)}};
}

void LinearWarmup::load_options_json(const nlohmann::json& j) {
  const int64_t warmup_steps = j.at("warmup_steps").get<int64_t>();
  const double start_factor = j.at("start_factor").get<double>();
  validate(warmup_steps, start_factor);
  const nlohmann::json& after = j.at("after");
  RG_CHECK(after.is_null() == !after_, "LinearWarmup: the checkpoint's warm-up ",
           after.is_null() ? "wraps no schedule" : "wraps a schedule", ", this one ",
           after_ ? "wraps " + after_->name() : std::string("wraps none"));
  if (after_) after_->from_json(after);
  warmup_steps_ = warmup_steps;
  start_factor_ = start_factor;
}

// ---- scale_lr ------------------------------------------------------------------------------
double scale_lr(double base_lr, int world_size, LrScaling mode) {
  RG_CHECK(world_size >= 1, "scale_lr: world_size must be >= 1, got ", world_size);
  RG_CHECK(base_lr >= 0, "scale_lr: invalid base_lr ", base_lr, " (must be >= 0)");
  switch (mode) {
    case LrScaling::none:
      return base_lr;
    case LrScaling::linear:
      return base_lr * world_size;
  }
  fail("scale_lr: invalid LrScaling ", static_cast<int>(mode));
}

}  // namespace rg
