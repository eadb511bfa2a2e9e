#include "optim/optimizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <unordered_set>

namespace rg {

namespace {

const std::string kPrefix = "optim.";
const std::string kStatePrefix = "optim.state.";

// "optim.state.<i>.<name>" -> (i, name); false when the key does not have that form.
bool parse_state_key(const std::string& key, std::size_t& index, std::string& name) {
  if (key.rfind(kStatePrefix, 0) != 0) return false;
  const std::size_t dot = key.find('.', kStatePrefix.size());
  if (dot == std::string::npos || dot == kStatePrefix.size() || dot + 1 == key.size()) return false;
  const std::string digits = key.substr(kStatePrefix.size(), dot - kStatePrefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      digits.size() > 9)
    return false;
  index = std::stoul(digits);
  name = key.substr(dot + 1);
  return true;
}

std::string state_key(std::size_t index, const std::string& name) {
  return kStatePrefix + std::to_string(index) + "." + name;
}

}  // namespace

void Optimizer::keep_lr_on_device(const Device& device) {
  RG_CHECK(reads_lr_on_device(), name_,
           ": its update takes its scalars from the host, so a captured step (--cuda-graphs) "
           "would repeat the first step's; use SGD");
  lr_on_device_ = zeros({static_cast<int64_t>(num_groups())}, {DType::f64, device});
  write_lr_to_device();
}

void Optimizer::write_lr_to_device() {
  if (!lr_on_device_.defined()) return;
  std::vector<double> rates(num_groups());
  for (std::size_t g = 0; g < rates.size(); ++g) rates[g] = lr(g);
  Tensor host = from_vector(rates, {static_cast<int64_t>(rates.size())}, {DType::f64});
  // Into the same memory every time (a captured update reads that address), queued on the
  // device's stream: from pinned memory the host does not wait.
  if (lr_on_device_.device().is_cuda())
    host = host.pin_memory().to(lr_on_device_.device(), NonBlocking::yes);
  copy_strided(lr_on_device_, host);
}

const double* Optimizer::lr_on_device(std::size_t group) const {
  if (!lr_on_device_.defined()) return nullptr;
  return static_cast<const double*>(lr_on_device_.data_ptr()) + group;
}

void Optimizer::zero_grad() {
  for (std::size_t g = 0; g < num_groups(); ++g)
    for (const Tensor& p : params(g)) Tensor(p).zero_grad();
}

std::vector<Tensor> Optimizer::all_params() const {
  std::vector<Tensor> all;
  for (std::size_t g = 0; g < num_groups(); ++g)
    all.insert(all.end(), params(g).begin(), params(g).end());
  return all;
}

std::size_t Optimizer::first_index(std::size_t group) const {
  std::size_t index = 0;
  for (std::size_t g = 0; g < group; ++g) index += params(g).size();
  return index;
}

void Optimizer::init_state() {
  std::unordered_set<const TensorImpl*> seen;
  std::size_t index = 0;
  for (std::size_t g = 0; g < num_groups(); ++g) {
    for (const Tensor& p : params(g)) {
      RG_CHECK(p.defined(), name_, ": parameter ", index, " (group ", g, ") is undefined");
      RG_CHECK(is_floating(p.dtype()), name_, ": parameter ", index, " (group ", g,
               ") must be floating point, got ", p.describe());
      RG_CHECK(p.is_leaf(), name_, ": parameter ", index, " (group ", g, ") ", p.describe(),
               " is not a leaf tensor: an optimizer updates leaves (use detach())");
      RG_CHECK(seen.insert(p.impl()).second, name_, ": parameter ", index, " (group ", g, ") ",
               p.describe(), " appears more than once; each parameter may be in one group once");
      ++index;
    }
  }
  RG_CHECK(index > 0, name_, ": got an empty parameter list");
  state_.assign(index, ParamState{});
}

void Optimizer::check_grad(std::size_t index, const Tensor& param, const Tensor& grad) const {
  RG_CHECK(grad.device() == param.device(), name_, ": gradient of parameter ", index, " is ",
           grad.describe(), " but the parameter is ", param.describe(),
           " (a gradient lives on its parameter's device)");
  RG_CHECK(grad.shape() == param.shape() && grad.dtype() == param.dtype(), name_,
           ": gradient of parameter ", index, " is ", grad.describe(), " but the parameter is ",
           param.describe());
}

std::unique_ptr<Optimizer> Optimizer::over(std::vector<std::vector<Tensor>>) const {
  fail(name_, " cannot be rebuilt over other tensors (ZeRO shards SGD and AdamW)");
}

void Optimizer::copy_hyperparameters(const Optimizer& other) {
  RG_CHECK(other.name_ == name_ && other.num_groups() == num_groups(), name_,
           ": cannot take the hyperparameters of ", other.name_, " with ", other.num_groups(),
           " group(s) (this one has ", num_groups(), ")");
  for (std::size_t g = 0; g < num_groups(); ++g) load_options_json(g, other.options_json(g));
}

int64_t Optimizer::state_bytes() const {
  int64_t bytes = 0;
  for (const ParamState& s : state_)
    for (const auto& [_, t] : s.buffers) bytes += static_cast<int64_t>(t.nbytes());
  return bytes;
}

void Optimizer::clear_state() {
  for (ParamState& s : state_) s = ParamState{};
}

StateDict Optimizer::state_dict() const {
  StateDict out;
  nlohmann::json groups = nlohmann::json::array();
  std::size_t index = 0;
  for (std::size_t g = 0; g < num_groups(); ++g) {
    nlohmann::json group = options_json(g);
    nlohmann::json ids = nlohmann::json::array();
    for (std::size_t k = 0; k < params(g).size(); ++k, ++index) {
      ids.push_back(index);
      const ParamState& s = state_[index];
      // Only the buffers the current options use: a buffer left over from earlier options
      // (momentum since set to 0) would not load back.
      for (const std::string& name : state_names(g)) {
        auto it = s.buffers.find(name);
        if (it != s.buffers.end()) out.tensors[state_key(index, name)] = it->second.clone();
      }
      if (counts_steps() && !s.buffers.empty())
        out.metadata[state_key(index, "step")] = std::to_string(s.step);
    }
    group["params"] = ids;
    groups.push_back(group);
  }
  out.metadata[kPrefix + "type"] = name_;
  out.metadata[kPrefix + "param_groups"] = groups.dump();
  return out;
}

void Optimizer::load_state_dict(const StateDict& sd) {
  const std::string what = name_ + ".load_state_dict: ";
  auto meta = [&](const std::string& key) -> const std::string& {
    auto it = sd.metadata.find(key);
    RG_CHECK(it != sd.metadata.end(), what, "metadata '", key,
             "' is missing (not an optimizer checkpoint?)");
    return it->second;
  };
  RG_CHECK(meta(kPrefix + "type") == name_, what, "the checkpoint holds the state of a '",
           meta(kPrefix + "type"), "' optimizer, not '", name_, "'");

  // 1. Parameter groups: the same count, the same parameters.
  nlohmann::json groups;
  try {
    groups = nlohmann::json::parse(meta(kPrefix + "param_groups"));
  } catch (const nlohmann::json::exception& e) {
    fail(what, "'optim.param_groups' is not valid JSON: ", e.what());
  }
  RG_CHECK(groups.is_array() && groups.size() == num_groups(), what, "the checkpoint has ",
           groups.is_array() ? std::to_string(groups.size()) : std::string("no list of"),
           " parameter groups, this optimizer has ", num_groups());
  std::size_t index = 0;
  for (std::size_t g = 0; g < num_groups(); ++g) {
    const nlohmann::json& group = groups[g];
    std::vector<std::size_t> ids;
    try {
      ids = group.at("params").get<std::vector<std::size_t>>();
    } catch (const nlohmann::json::exception& e) {
      fail(what, "parameter group ", g, " has no valid 'params' list: ", e.what());
    }
    RG_CHECK(ids.size() == params(g).size(), what, "parameter group ", g, " has ", ids.size(),
             " parameters in the checkpoint but ", params(g).size(), " in this optimizer");
    for (std::size_t id : ids)
      RG_CHECK(id == index++, what, "parameter group ", g,
               " lists parameter indices out of order (expected consecutive indices)");
  }

  // 2. State tensors and step counters, checked against the parameters they belong to.
  const std::vector<Tensor> all = all_params();
  std::vector<ParamState> loaded(all.size());
  for (const auto& [key, t] : sd.tensors) {
    if (key.rfind(kPrefix, 0) != 0) continue;
    std::size_t i = 0;
    std::string name;
    RG_CHECK(parse_state_key(key, i, name), what, "unexpected tensor '", key,
             "' (expected optim.state.<index>.<buffer>)");
    RG_CHECK(i < all.size(), what, "tensor '", key, "' is for parameter ", i,
             " but this optimizer has ", all.size(), " parameters");
    RG_CHECK(t.defined() && t.shape() == all[i].shape(), what, "tensor '", key, "' is ",
             t.describe(), " but parameter ", i, " is ", all[i].describe());
    RG_CHECK(is_floating(t.dtype()), what, "tensor '", key, "' must be floating point, got ",
             t.describe());
    loaded[i].buffers[name] = t.to(all[i].dtype()).to(all[i].device()).clone();
  }
  for (const auto& [key, value] : sd.metadata) {
    if (key.rfind(kPrefix, 0) != 0 || key == kPrefix + "type" || key == kPrefix + "param_groups")
      continue;
    std::size_t i = 0;
    std::string name;
    RG_CHECK(parse_state_key(key, i, name) && name == "step" && counts_steps(), what,
             "unexpected metadata '", key, "'");
    RG_CHECK(i < all.size(), what, "metadata '", key, "' is for parameter ", i,
             " but this optimizer has ", all.size(), " parameters");
    nlohmann::json step;
    try {
      step = nlohmann::json::parse(value);
    } catch (const nlohmann::json::exception&) {
    }
    RG_CHECK(step.is_number_integer() && step.get<int64_t>() >= 0, what, "metadata '", key,
             "' must be a non-negative integer, got '", value, "'");
    loaded[i].step = step.get<int64_t>();
  }

  // 3. Hyperparameters, then per-parameter completeness under the loaded hyperparameters (e.g.
  //    amsgrad decides whether max_exp_avg_sq must be there). Restore on failure.
  std::vector<nlohmann::json> old_options;
  for (std::size_t g = 0; g < num_groups(); ++g) old_options.push_back(options_json(g));
  try {
    index = 0;
    for (std::size_t g = 0; g < num_groups(); ++g) {
      try {
        nlohmann::json options = groups[g];
        options.erase("params");
        load_options_json(g, options);
      } catch (const std::exception& e) {  // a missing key, a wrong type, an invalid value
        fail(what, "parameter group ", g, " in 'optim.param_groups': ", e.what());
      }
      const std::vector<std::string> names = state_names(g);
      for (std::size_t k = 0; k < params(g).size(); ++k, ++index) {
        const ParamState& s = loaded[index];
        const bool has_step = sd.metadata.count(state_key(index, "step")) > 0;
        if (s.buffers.empty() && !has_step) continue;  // never updated
        for (const std::string& n : names)
          RG_CHECK(s.buffers.count(n), what, "tensor '", state_key(index, n),
                   "' is missing (parameter ", index, " has other state)");
        for (const auto& [n, buffer] : s.buffers)
          RG_CHECK(std::find(names.begin(), names.end(), n) != names.end(), what,
                   "unexpected tensor '", state_key(index, n), "' for parameter ", index,
                   " of group ", g);
        RG_CHECK(!counts_steps() || has_step, what, "metadata '", state_key(index, "step"),
                 "' is missing (parameter ", index, " has other state)");
      }
    }
  } catch (...) {
    for (std::size_t g = 0; g < num_groups(); ++g) load_options_json(g, old_options[g]);
    throw;
  }
  state_ = std::move(loaded);
}

}  // namespace rg
