#include "optim/loss_scaler.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "ops/ops.h"
#include "optim/param_update.h"
#include "optim/update_items.h"

namespace rg {
namespace {

const char* mode_name(LossScaleMode mode) {
  return mode == LossScaleMode::dynamic ? "dynamic" : "static";
}

void validate(const LossScalerOptions& o) {
  RG_CHECK(o.mode != LossScaleMode::none,
           "LossScaler: mode none means no scaler; MixedPrecision makes none for it");
  RG_CHECK(std::isfinite(o.init_scale) && o.init_scale > 0,
           "LossScaler: init_scale must be a positive finite number, got ", o.init_scale);
  RG_CHECK(std::isfinite(o.min_scale) && o.min_scale > 0,
           "LossScaler: min_scale (the floor) must be a positive finite number, got ", o.min_scale);
  RG_CHECK(o.max_scale >= o.min_scale, "LossScaler: min_scale (floor) ", o.min_scale,
           " is above max_scale (ceiling) ", o.max_scale);
  RG_CHECK(o.growth_factor > 1 && std::isfinite(o.growth_factor),
           "LossScaler: growth_factor must be > 1, got ", o.growth_factor);
  RG_CHECK(o.backoff_factor > 0 && o.backoff_factor < 1,
           "LossScaler: backoff_factor must be in (0, 1), got ", o.backoff_factor);
  RG_CHECK(o.growth_interval >= 1, "LossScaler: growth_interval must be >= 1, got ",
           o.growth_interval);
  RG_CHECK(o.mode == LossScaleMode::fixed ||
               (o.init_scale >= o.min_scale && o.init_scale <= o.max_scale),
           "LossScaler: init_scale ", o.init_scale, " is outside [min_scale, max_scale] = [",
           o.min_scale, ", ", o.max_scale, "]");
}

// Metadata values: integers exactly, doubles round-trip exactly (shortest form).
std::string number(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}
std::string number(int64_t v) {
  return std::to_string(v);
}

}  // namespace

LossScalerOptions parse_loss_scale(const std::string& text) {
  LossScalerOptions o;
  if (text == "dynamic") return o;
  if (text == "none") return {.mode = LossScaleMode::none};
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  RG_CHECK(ec == std::errc() && ptr == end && std::isfinite(value) && value > 0,
           "--loss-scale: expected \"dynamic\", \"none\" or a positive number, got \"", text, "\"");
  o.mode = LossScaleMode::fixed;
  o.init_scale = value;
  o.min_scale = std::min(o.min_scale, value);
  o.max_scale = std::max(o.max_scale, value);
  return o;
}

LossScaler::LossScaler(LossScalerOptions options) : options_(options) {
  validate(options_);
  scale_ = options_.init_scale;
}

void LossScaler::set_param_names(std::vector<std::string> names) {
  names_ = std::move(names);
}

void LossScaler::set_found_inf_hook(FoundInfHook hook) {
  hook_ = std::move(hook);
}

Tensor LossScaler::scale(const Tensor& loss) const {
  RG_CHECK(loss.defined(), "LossScaler.scale: the loss is an undefined tensor");
  RG_CHECK(is_floating(loss.dtype()), "LossScaler.scale: the loss must be floating point, got ",
           loss.describe());
  RG_CHECK(loss.numel() == 1, "LossScaler.scale: the loss must have one element, got ",
           loss.describe());
  const bool half = loss.dtype() == DType::f16 || loss.dtype() == DType::bf16;
  return (half ? loss.to(DType::f32) : loss) * scale_;
}

void LossScaler::unscale(Optimizer& optimizer) {
  RG_CHECK(phase_ == Phase::idle,
           "LossScaler.unscale: already called since the last update() (the gradients are "
           "already unscaled; call update() once per step)");
  RG_CHECK(!optimizer_ || optimizer_ == &optimizer,
           "LossScaler.unscale: this scaler serves another optimizer; use one LossScaler per "
           "optimizer");
  optimizer_ = &optimizer;
  const std::vector<Tensor> params = optimizer.all_params();
  RG_CHECK(names_.empty() || names_.size() == params.size(), "LossScaler.unscale: ", names_.size(),
           " parameter names were given for an optimizer of ", params.size(), " parameters");
  // One fused unscale-and-check over every gradient (one launch per device on cuda), then one
  // integer read back: the first parameter whose gradient held inf/NaN, or none.
  std::vector<detail::WorkingView> views;
  std::vector<Tensor> grads;
  std::vector<int64_t> indices;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor grad = params[i].grad();
    if (!grad.defined()) continue;
    views.push_back(detail::working_view(grad));
    grads.push_back(views.back().work);
    indices.push_back(static_cast<int64_t>(i));
  }
  int64_t bad = -1;
  {
    NoGradGuard no_grad;
    bad = detail::unscale_grads(grads, indices, 1.0 / scale_);
    for (const auto& v : views) detail::write_back(v);
  }
  const std::optional<std::size_t> first_bad =
      bad < 0 ? std::nullopt : std::optional<std::size_t>(static_cast<std::size_t>(bad));
  FoundInfVerdict verdict{first_bad.has_value(), -1, first_bad};
  if (hook_) verdict = hook_(first_bad);
  found_inf_ = verdict.found_inf;
  // The step's overflow is the one the verdict names — another rank's parameter when the
  // overflow was there — never an earlier one of this process.
  step_overflow_.reset();
  if (found_inf_ && verdict.param_index) {
    const std::size_t i = *verdict.param_index;
    RG_CHECK(i < params.size(), "LossScaler.unscale: the found-inf hook named parameter ", i,
             " of an optimizer of ", params.size(), " parameters");
    step_overflow_ = OverflowInfo{
        steps_, i, names_.empty() ? "param " + std::to_string(i) : names_[i], verdict.rank};
    last_overflow_ = step_overflow_;
  }
  phase_ = Phase::unscaled;
}

bool LossScaler::step(Optimizer& optimizer) {
  if (phase_ == Phase::idle) unscale(optimizer);
  RG_CHECK(optimizer_ == &optimizer,
           "LossScaler.step: unscale() ran on another optimizer; use one LossScaler per "
           "optimizer");
  if (found_inf_) return false;
  optimizer.step();
  return true;
}

void LossScaler::update() {
  RG_CHECK(phase_ == Phase::unscaled,
           "LossScaler.update: no unscale() or step() since the last update(), so there is no "
           "inf/NaN check to act on");
  phase_ = Phase::idle;
  ScalerStep record{steps_, scale_, scale_, found_inf_, step_overflow_};
  ++steps_;
  if (found_inf_) ++skipped_;
  if (options_.mode == LossScaleMode::dynamic) {
    if (found_inf_) {
      scale_ = std::max(scale_ * options_.backoff_factor, options_.min_scale);
      good_steps_ = 0;
    } else if (++good_steps_ >= options_.growth_interval) {
      scale_ = std::min(scale_ * options_.growth_factor, options_.max_scale);
      good_steps_ = 0;
    }
  }
  record.next_scale = scale_;
  last_step_ = record;
  if (history_.size() >= kMaxHistory) history_.pop_front();
  history_.push_back(std::move(record));
}

std::vector<ScalerStep> LossScaler::take_history() {
  std::vector<ScalerStep> out(std::make_move_iterator(history_.begin()),
                              std::make_move_iterator(history_.end()));
  history_.clear();
  return out;
}

std::string describe_skip(const ScalerStep& r) {
  std::ostringstream out;
  out << "step " << r.step + 1 << ": gradient overflow";
  if (r.overflow) {
    out << " in " << r.overflow->param_name;
    if (r.overflow->rank >= 0) out << " on rank " << r.overflow->rank;
  }
  out << ", step " << (r.skipped ? "skipped" : "taken") << ", loss scale now " << r.next_scale;
  return out.str();
}

StateDict LossScaler::state_dict() const {
  StateDict out;
  auto& m = out.metadata;
  m["scaler.mode"] = mode_name(options_.mode);
  m["scaler.scale"] = number(scale_);
  m["scaler.growth_tracker"] = number(good_steps_);
  m["scaler.skipped_steps"] = number(skipped_);
  m["scaler.steps"] = number(steps_);
  m["scaler.growth_factor"] = number(options_.growth_factor);
  m["scaler.backoff_factor"] = number(options_.backoff_factor);
  m["scaler.growth_interval"] = number(options_.growth_interval);
  m["scaler.min_scale"] = number(options_.min_scale);
  m["scaler.max_scale"] = number(options_.max_scale);
  return out;
}

void LossScaler::load_state_dict(const StateDict& state) {
  RG_CHECK(phase_ == Phase::idle,
           "LossScaler.load_state_dict: called between unscale() and update()");
  const auto& m = state.metadata;
  auto text = [&](const std::string& key) -> const std::string& {
    auto it = m.find(key);
    RG_CHECK(it != m.end(), "LossScaler.load_state_dict: metadata has no '", key, "'");
    return it->second;
  };
  auto real = [&](const std::string& key) {
    const std::string& s = text(key);
    double v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    RG_CHECK(ec == std::errc() && ptr == s.data() + s.size(), "LossScaler.load_state_dict: '", key,
             "' is not a number: \"", s, "\"");
    return v;
  };
  auto integer = [&](const std::string& key) {
    const std::string& s = text(key);
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    RG_CHECK(ec == std::errc() && ptr == s.data() + s.size() && v >= 0,
             "LossScaler.load_state_dict: '", key, "' is not a non-negative integer: \"", s, "\"");
    return v;
  };
  const std::string& mode = text("scaler.mode");
  RG_CHECK(mode == "dynamic" || mode == "static", "LossScaler.load_state_dict: 'scaler.mode' is \"",
           mode, "\" (expected dynamic or static)");
  LossScalerOptions o;
  o.mode = mode == "dynamic" ? LossScaleMode::dynamic : LossScaleMode::fixed;
  o.init_scale = real("scaler.scale");
  o.growth_factor = real("scaler.growth_factor");
  o.backoff_factor = real("scaler.backoff_factor");
  o.growth_interval = integer("scaler.growth_interval");
  o.min_scale = real("scaler.min_scale");
  o.max_scale = real("scaler.max_scale");
  const int64_t tracker = integer("scaler.growth_tracker");
  const int64_t skipped = integer("scaler.skipped_steps");
  const int64_t steps = integer("scaler.steps");
  try {
    validate(o);
  } catch (const Error& e) {
    fail("LossScaler.load_state_dict: ", e.what());
  }
  options_ = o;
  scale_ = o.init_scale;
  good_steps_ = tracker;
  skipped_ = skipped;
  steps_ = steps;
}

}  // namespace rg
