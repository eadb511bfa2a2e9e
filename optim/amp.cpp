#include "optim/amp.h"

#include <cctype>

#include "core/autograd.h"
#include "ops/ops.h"

namespace rg {
namespace {

const std::string kMasterPrefix = "amp.master.";

bool is_half(DType d) {
  return d == DType::f16 || d == DType::bf16;
}

}  // namespace

OptLevel parse_opt_level(std::string_view text) {
  if (text.size() == 2 && (text[0] == 'O' || text[0] == 'o') && text[1] >= '0' && text[1] <= '3')
    return static_cast<OptLevel>(text[1] - '0');
  fail("amp: unknown opt level \"", text, "\" (expected O0, O1, O2 or O3)");
}

std::string_view opt_level_name(OptLevel level) {
  static constexpr std::string_view names[] = {"O0", "O1", "O2", "O3"};
  return names[static_cast<int>(level)];
}

DType parse_amp_dtype(std::string_view text) {
  if (text == "fp16" || text == "f16" || text == "float16") return DType::f16;
  if (text == "bf16" || text == "bfloat16") return DType::bf16;
  fail("amp: unknown dtype \"", text, "\" (expected fp16 or bf16)");
}

MixedPrecision::MixedPrecision(nn::Module& model, AmpOptions options)
    : model_(model), options_(std::move(options)) {
  RG_CHECK(is_half(options_.dtype), "amp: dtype must be f16 or bf16, got ", options_.dtype);
  const OptLevel level = options_.level;
  if (level == OptLevel::O2) model_.to(options_.dtype);  // BatchNorm keeps f32
  if (level == OptLevel::O3) model_.to(options_.dtype, nn::KeepFloat32::never);
  for (auto& [name, p] : model_.named_parameters()) {
    names_.push_back(name);
    model_params_.push_back(p);
  }
  RG_CHECK(!model_params_.empty(), "amp: the model has no parameters");
  if (level == OptLevel::O2) {
    for (const Tensor& p : model_params_) {
      // f32 parameters (BatchNorm's) are their own masters: their gradients arrive in f32.
      opt_params_.push_back(p.dtype() == DType::f32
                                ? p
                                : p.detach().to(DType::f32).set_requires_grad(p.requires_grad()));
    }
  } else {
    opt_params_ = model_params_;
  }
  if (level != OptLevel::O0 && options_.scaler.mode != LossScaleMode::none) {
    scaler_.emplace(options_.scaler);
    scaler_->set_param_names(names_);
  }
}

LossScalerOptions default_loss_scale(DType dtype) {
  if (dtype == DType::bf16) return {.mode = LossScaleMode::none};
  return {};
}

Tensor MixedPrecision::cast_input(const Tensor& x) const {
  const bool half_model = options_.level == OptLevel::O2 || options_.level == OptLevel::O3;
  if (!half_model || !x.defined() || !is_floating(x.dtype())) return x;
  return x.to(options_.dtype);
}

AutocastGuard MixedPrecision::autocast() const {
  // Only O1 autocasts: O2/O3 models are already 16-bit, O0 is f32 throughout. A guard with
  // nullopt turns autocast off for the scope, which is what O0/O2/O3 want anyway.
  return AutocastGuard(options_.level == OptLevel::O1 ? std::optional(options_.dtype)
                                                      : std::nullopt);
}

void MixedPrecision::backward(const Tensor& loss, MasterGrads grads) {
  RG_CHECK(loss.defined() && is_floating(loss.dtype()) && loss.numel() == 1,
           "amp.backward: the loss must be a one-element floating tensor, got ", loss.describe());
  if (scaler_)
    scaler_->scale(loss).backward();
  else
    loss.backward();
  if (options_.level != OptLevel::O2 || grads == MasterGrads::defer) return;
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < model_params_.size(); ++i) {
    Tensor model_param = model_params_[i];
    Tensor master = opt_params_[i];
    if (master.same_as(model_param)) continue;
    const Tensor g = model_param.grad();
    if (!g.defined()) continue;
    // f16 -> f32 is exact: the masters see precisely the (scaled) gradient backward made.
    const Tensor g32 = g.to(DType::f32);
    if (master.grad().defined())
      add_inplace(master.grad(), g32);
    else
      master.set_grad(g32);
    model_param.zero_grad();  // the next backward starts from zero in 16 bits
  }
}

void MixedPrecision::unscale(Optimizer& optimizer) {
  if (scaler_) scaler_->unscale(optimizer);
}

bool MixedPrecision::step(Optimizer& optimizer) {
  bool stepped = true;
  if (scaler_)
    stepped = scaler_->step(optimizer);
  else
    optimizer.step();  // no scaler (O0, or bf16's default): nothing to skip
  if (stepped && options_.level == OptLevel::O2) {
    NoGradGuard no_grad;
    for (std::size_t i = 0; i < model_params_.size(); ++i)
      if (!opt_params_[i].same_as(model_params_[i]))
        copy_strided(model_params_[i], opt_params_[i]);  // rounds to nearest even
  }
  return stepped;
}

void MixedPrecision::update() {
  if (scaler_) scaler_->update();
}

void MixedPrecision::sync_masters_from_model() {
  if (options_.level != OptLevel::O2) return;
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < model_params_.size(); ++i)
    if (!opt_params_[i].same_as(model_params_[i])) copy_strided(opt_params_[i], model_params_[i]);
}

StateDict MixedPrecision::state_dict() const {
  StateDict out;
  if (scaler_) out = scaler_->state_dict();
  out.metadata["amp.level"] = std::string(opt_level_name(options_.level));
  out.metadata["amp.dtype"] = std::string(dtype_name(options_.dtype));
  if (options_.level == OptLevel::O2)
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (!opt_params_[i].same_as(model_params_[i]))
        out.tensors[kMasterPrefix + names_[i]] = opt_params_[i].detach().clone();
  return out;
}

void MixedPrecision::load_state_dict(const StateDict& state) {
  auto meta = [&](const std::string& key) -> const std::string& {
    auto it = state.metadata.find(key);
    RG_CHECK(it != state.metadata.end(), "amp.load_state_dict: metadata has no '", key, "'");
    return it->second;
  };
  RG_CHECK(meta("amp.level") == opt_level_name(options_.level), "amp.load_state_dict: saved at ",
           meta("amp.level"), " but this run is ", opt_level_name(options_.level));
  RG_CHECK(meta("amp.dtype") == dtype_name(options_.dtype), "amp.load_state_dict: saved with ",
           meta("amp.dtype"), " but this run uses ", dtype_name(options_.dtype));
  // Validate every master before changing anything.
  std::vector<std::pair<std::size_t, Tensor>> masters;
  if (options_.level == OptLevel::O2) {
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (opt_params_[i].same_as(model_params_[i])) continue;
      const std::string key = kMasterPrefix + names_[i];
      auto it = state.tensors.find(key);
      RG_CHECK(it != state.tensors.end(), "amp.load_state_dict: no master weight '", key, "'");
      RG_CHECK(it->second.shape() == opt_params_[i].shape(), "amp.load_state_dict: '", key, "' is ",
               it->second.describe(), " but the parameter is ", opt_params_[i].describe());
      masters.emplace_back(i, it->second);
    }
  }
  // A run's scaler follows --loss-scale; a checkpoint saved without one (none) has no scaler.*
  // state to continue from, and one saved with one is read and dropped.
  RG_CHECK(!scaler_ || state.metadata.count("scaler.mode"),
           "amp.load_state_dict: the checkpoint was trained without a loss scaler (--loss-scale "
           "none, bf16's default); resume it with --loss-scale none");
  if (scaler_) scaler_->load_state_dict(state);
  NoGradGuard no_grad;
  for (auto& [i, t] : masters) {
    copy_strided(opt_params_[i], t.to(opt_params_[i].device()));
    copy_strided(model_params_[i], opt_params_[i]);
  }
}

}  // namespace rg
