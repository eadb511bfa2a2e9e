#include "train/pretrained.h"

#include <sstream>
#include <string_view>

#include "core/safetensors.h"
#include "train/model_card.h"

namespace rg::train {
namespace {

constexpr std::string_view kWrapperPrefix = "module.";
constexpr std::string_view kAmpMasterPrefix = "amp.master.";

// Entries of a ringgrad checkpoint that are not the model's (optim/checkpoint.h).
bool training_state(const std::string& key) {
  return key.starts_with("optim.") || key.starts_with("amp.") || key.starts_with("scaler.");
}

}  // namespace

std::string Pretrained::describe() const {
  std::string line = "'" + path + "' (" + std::to_string(tensors.size()) + " tensors";
  if (!stripped_prefix.empty())
    line += "; DataParallel's '" + stripped_prefix + "' prefix stripped from every key";
  return line + ")";
}

Pretrained read_pretrained(const std::string& path) {
  SafetensorsFile file = load_safetensors(path);
  Pretrained w;
  w.path = path;
  w.metadata = std::move(file.metadata);
  bool all_prefixed = !file.tensors.empty();
  for (const auto& [key, t] : file.tensors)
    all_prefixed = all_prefixed && std::string_view(key).starts_with(kWrapperPrefix);
  if (all_prefixed) w.stripped_prefix = std::string(kWrapperPrefix);
  for (auto& [key, t] : file.tensors) {
    std::string name = key.substr(w.stripped_prefix.size());
    if (!training_state(name)) w.tensors[name] = t;
  }
  // O2 masters are the true weights (load_checkpoint's rule).
  for (const auto& [key, t] : file.tensors) {
    const std::string name = key.substr(w.stripped_prefix.size());
    if (!name.starts_with(kAmpMasterPrefix)) continue;
    const std::string param = name.substr(kAmpMasterPrefix.size());
    if (w.tensors.count(param)) w.tensors[param] = t;
  }
  RG_CHECK(!w.tensors.empty(), "weights '", path, "' hold no tensor of a model");
  return w;
}

void load_pretrained(nn::Module& model, const Pretrained& weights, const std::string& what) {
  std::map<std::string, Tensor> own = model.state_dict();
  int64_t missing = 0, surplus = 0, mismatched = 0;
  std::string first_missing, first_surplus, first_mismatch;
  for (const auto& [key, t] : own) {
    const auto it = weights.tensors.find(key);
    if (it == weights.tensors.end()) {
      if (missing++ == 0) first_missing = key + " " + shape_str(t.shape());
    } else if (it->second.shape() != t.shape()) {
      if (mismatched++ == 0)
        first_mismatch = key + ": the file's " + shape_str(it->second.shape()) + ", the model's " +
                         shape_str(t.shape());
    }
  }
  for (const auto& [key, t] : weights.tensors)
    if (!own.count(key) && surplus++ == 0) first_surplus = key + " " + shape_str(t.shape());
  if (missing || surplus || mismatched) {
    std::ostringstream msg;
    msg << "weights '" << weights.path << "' do not fit " << what << " (" << own.size()
        << " tensors; the file has " << weights.tensors.size()
        << (weights.stripped_prefix.empty() ? "" : ", 'module.' stripped") << "):";
    if (missing) msg << "\n  " << missing << " missing, the first: " << first_missing;
    if (surplus) msg << "\n  " << surplus << " surplus, the first: " << first_surplus;
    if (mismatched)
      msg << "\n  " << mismatched << " of another shape, the first: " << first_mismatch;
    if (missing && surplus)
      msg << "\n  (another model's weights? --model names the one they are for)";
    throw Error(msg.str());
  }
  model.load_state_dict(weights.tensors);  // strict; converts dtypes, keeps devices
}

std::string init_from(nn::Module& model, const std::string& path, const std::string& model_name) {
  const Pretrained weights = read_pretrained(path);
  std::string note = "init from " + weights.describe() + ": weights only";
  if (has_model_card(weights.metadata)) {
    const ModelCard card = read_model_card(weights.metadata, path);
    RG_CHECK(card.model == model_name, "init_from '", path, "': its model card says it holds ",
             card.model, ", and --model is ", model_name);
    if (card.mean != data::kCifar10Mean || card.std != data::kCifar10Std)
      note +=
          "; note: its card records another input normalisation than train_cifar's "
          "(CIFAR-10's mean and std), so the first steps see inputs it did not train on";
  }
  load_pretrained(model, weights, model_name);
  return note;
}

}  // namespace rg::train
