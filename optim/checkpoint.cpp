#include "optim/checkpoint.h"

#include <charconv>
#include <cstdint>
#include <string_view>
#include <system_error>

#include "core/rng.h"
#include "core/safetensors.h"

namespace rg {
namespace {
constexpr std::string_view kOptimPrefix = "optim.";
constexpr std::string_view kAmpPrefix = "amp.";
constexpr std::string_view kAmpMasterPrefix = "amp.master.";

// A checkpoint is outside data: each number must be the whole value ("12abc" is not 12, as
// std::stoll would read it) and in range, or the error names the key and the text.
int64_t read_int(const std::map<std::string, std::string>& meta, const std::string& key,
                 const std::string& path, int64_t min_value = INT64_MIN) {
  auto it = meta.find(key);
  RG_CHECK(it != meta.end(), "checkpoint '", path, "': metadata has no '", key, "'");
  const std::string& text = it->second;
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  RG_CHECK(ec == std::errc() && end == text.data() + text.size() && value >= min_value,
           "checkpoint '", path, "': metadata '", key, "' is not an integer",
           min_value == 0 ? " >= 0" : "", ": \"", text.substr(0, 64), "\"");
  return value;
}

double read_double(const std::map<std::string, std::string>& meta, const std::string& key,
                   const std::string& path, double missing) {
  auto it = meta.find(key);
  if (it == meta.end()) return missing;
  const std::string& text = it->second;
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  RG_CHECK(ec == std::errc() && end == text.data() + text.size(), "checkpoint '", path,
           "': metadata '", key, "' is not a number: \"", text.substr(0, 64), "\"");
  return value;
}
}  // namespace

void save_checkpoint(const std::string& path, const nn::Module& model, const Optimizer* optimizer,
                     const LRScheduler* scheduler, const TrainingState& state,
                     const MixedPrecision* amp, const BeforeRename& before_rename) {
  std::map<std::string, Tensor> tensors = model.state_dict();
  std::map<std::string, std::string> meta = state.extra;
  if (optimizer) {
    StateDict sd = optimizer->state_dict();
    tensors.insert(sd.tensors.begin(), sd.tensors.end());
    meta.insert(sd.metadata.begin(), sd.metadata.end());
  }
  if (amp) {
    StateDict sd = amp->state_dict();
    tensors.insert(sd.tensors.begin(), sd.tensors.end());
    meta.insert(sd.metadata.begin(), sd.metadata.end());
  }
  if (scheduler) {
    auto sched = scheduler->state_dict();
    meta.insert(sched.begin(), sched.end());
  }
  const PhiloxState rng = default_generator().state();
  meta["rng.seed"] = std::to_string(rng.seed);
  meta["rng.offset"] = std::to_string(rng.offset);
  meta["train.epoch"] = std::to_string(state.epoch);
  meta["train.step"] = std::to_string(state.step);
  meta["train.best_accuracy"] = std::to_string(state.best_accuracy);
  save_safetensors(path, tensors, meta, before_rename);
}

TrainingState load_checkpoint(const std::string& path, nn::Module& model, Optimizer* optimizer,
                              LRScheduler* scheduler, MixedPrecision* amp) {
  SafetensorsFile file = load_safetensors(path);
  std::map<std::string, Tensor> model_state;
  StateDict optim_state;
  StateDict amp_state;
  for (auto& [name, t] : file.tensors) {
    if (std::string_view(name).starts_with(kOptimPrefix))
      optim_state.tensors[name] = t;
    else if (std::string_view(name).starts_with(kAmpPrefix))
      amp_state.tensors[name] = t;
    else
      model_state[name] = t;
  }
  // O2 masters are the true weights: the model loads them (rounded to its own dtype) rather
  // than the 16-bit copies, so an O2 checkpoint also restores an f32 model at full precision.
  for (auto& [name, t] : amp_state.tensors) {
    const std::string param = name.substr(std::string_view(kAmpMasterPrefix).size());
    if (name.starts_with(kAmpMasterPrefix) && model_state.count(param)) model_state[param] = t;
  }
  amp_state.metadata = file.metadata;
  optim_state.metadata = file.metadata;
  try {
    model.load_state_dict(model_state);
    if (optimizer) {
      RG_CHECK(file.metadata.count("optim.type"), "it holds no optimizer state");
      optimizer->load_state_dict(optim_state);
    }
    if (scheduler) scheduler->load_state_dict(file.metadata);
    if (amp) amp->load_state_dict(amp_state);
  } catch (const Error& e) {
    fail("checkpoint '", path, "': ", e.what());
  }
  TrainingState state;
  state.epoch = read_int(file.metadata, "train.epoch", path, 0);
  state.step = read_int(file.metadata, "train.step", path, 0);
  state.best_accuracy = read_double(file.metadata, "train.best_accuracy", path, 0);
  PhiloxState rng;
  rng.seed = static_cast<uint64_t>(read_int(file.metadata, "rng.seed", path));
  rng.offset = static_cast<uint64_t>(read_int(file.metadata, "rng.offset", path));
  default_generator().set_state(rng);
  for (auto& [k, v] : file.metadata)
    if (!k.starts_with("optim.") && !k.starts_with("train.") && !k.starts_with("rng.") &&
        k != "lr_scheduler" && !(amp && (k.starts_with("amp.") || k.starts_with("scaler."))))
      state.extra[k] = v;
  return state;
}

}  // namespace rg
