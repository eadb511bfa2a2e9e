#include "nn/module.h"

#include <ostream>
#include <set>
#include <sstream>

#include "core/autograd.h"

namespace rg::nn {

namespace {
void check_name(const std::string& name, const std::string& owner) {
  RG_CHECK(!name.empty() && name.find('.') == std::string::npos, owner, ": invalid member name '",
           name, "' (must be non-empty, without '.')");
}
}  // namespace

void Module::register_parameter(const std::string& name, Tensor* member) {
  check_name(name, type_name());
  if (member->defined() && !member->requires_grad()) member->set_requires_grad(true);
  parameters_.emplace_back(name, member);
}

void Module::register_buffer(const std::string& name, Tensor* member) {
  check_name(name, type_name());
  buffers_.emplace_back(name, member);
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module, Rebind rebind) {
  check_name(name, type_name());
  RG_CHECK(module != nullptr, type_name(), ": child '", name, "' is null");
  for (const auto& [existing, _] : children_)
    RG_CHECK(existing != name, type_name(), ": a child named '", name, "' exists already");
  children_.emplace_back(name, std::move(module));
  rebind_.push_back(std::move(rebind));
}

void Module::register_wrapped_module(std::shared_ptr<Module> module) {
  RG_CHECK(module != nullptr, type_name(), ": the wrapped module is null");
  for (const auto& [existing, _] : children_)
    RG_CHECK(!existing.empty(), type_name(), ": wraps a module already");
  children_.emplace_back("", std::move(module));
  rebind_.emplace_back();
}

void Module::replace_child(const std::string& name, std::shared_ptr<Module> module) {
  RG_CHECK(module != nullptr, type_name(), ".replace_child('", name, "'): the new module is null");
  for (std::size_t i = 0; i < children_.size(); ++i) {
    if (name.empty() || children_[i].first != name) continue;
    const std::string old_type = children_[i].second->type_name();
    if (rebind_[i]) {
      RG_CHECK(rebind_[i](module), type_name(), ".replace_child('", name, "'): a ",
               module->type_name(), " cannot take the place of the ", old_type,
               ": the member holding it needs a type the new module does not derive from");
    } else {
      RG_CHECK(calls_children_through_registry(), type_name(), ".replace_child('", name,
               "'): the child (a ", old_type,
               ") was registered by value, so a typed member may still call the old module; "
               "register it by address: register_module(\"",
               name, "\", &member_)");
    }
    children_[i].second = std::move(module);
    return;
  }
  std::string names;
  for (const auto& [n, _] : children_)
    if (!n.empty()) names += (names.empty() ? "" : ", ") + n;
  fail(type_name(), ".replace_child: no child named '", name,
       "' (children: ", names.empty() ? "none" : names, ")");
}

void Module::collect(const std::string& prefix, bool params,
                     std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, t] : params ? parameters_ : buffers_)
    if (t->defined()) out.emplace_back(prefix + name, *t);  // undefined: e.g. no bias
  for (const auto& [name, child] : children_)
    child->collect(name.empty() ? prefix : prefix + name + ".", params, out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", true, out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [_, t] : named_parameters()) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", false, out);
  return out;
}

// The same walk as collect(), handing out the members instead of copies of their handles.
void Module::collect_members(const std::string& prefix, bool params,
                             std::vector<std::pair<std::string, Tensor*>>& out) {
  for (const auto& [name, t] : params ? parameters_ : buffers_)
    if (t->defined()) out.emplace_back(prefix + name, t);
  for (const auto& [name, child] : children_)
    child->collect_members(name.empty() ? prefix : prefix + name + ".", params, out);
}

std::vector<std::pair<std::string, Tensor*>> Module::parameter_members() {
  std::vector<std::pair<std::string, Tensor*>> out;
  collect_members("", true, out);
  return out;
}

std::vector<std::pair<std::string, Tensor*>> Module::buffer_members() {
  std::vector<std::pair<std::string, Tensor*>> out;
  collect_members("", false, out);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out{{"", this}};
  for (auto& [name, child] : children_)
    for (auto& [sub, m] : child->named_modules())
      out.emplace_back(sub.empty() || name.empty() ? name + sub : name + "." + sub, m);
  return out;
}

int64_t Module::parameter_count() const {
  int64_t n = 0;
  for (auto& [_, t] : named_parameters()) n += t.numel();
  return n;
}

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> out;
  for (auto& [name, t] : named_parameters()) out[name] = t.detach();
  for (auto& [name, t] : named_buffers()) out[name] = t.detach();
  return out;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, LoadMode mode) {
  std::map<std::string, Tensor> own;
  for (auto& [name, t] : named_parameters()) own[name] = t;
  for (auto& [name, t] : named_buffers()) own[name] = t;
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [name, t] : own) {
    auto it = state.find(name);
    if (it == state.end()) {
      missing.push_back(name);
    } else if (it->second.shape() != t.shape()) {
      mismatched.push_back(name + ": checkpoint " + shape_str(it->second.shape()) + ", model " +
                           shape_str(t.shape()));
    }
  }
  for (const auto& [name, _] : state)
    if (!own.count(name)) unexpected.push_back(name);
  const bool refuse = !mismatched.empty() ||
                      (mode == LoadMode::strict && (!missing.empty() || !unexpected.empty()));
  if (refuse) {
    std::ostringstream msg;
    msg << "load_state_dict: the state does not fit " << type_name() << ":";
    auto list = [&](const char* what, const std::vector<std::string>& keys) {
      if (keys.empty()) return;
      msg << "\n  " << what << " (" << keys.size() << "):";
      for (const auto& k : keys) msg << "\n    " << k;
    };
    list("missing keys", missing);
    list("unexpected keys", unexpected);
    list("shape mismatches", mismatched);
    throw Error(msg.str());
  }
  NoGradGuard no_grad;
  for (auto& [name, t] : own) {
    auto it = state.find(name);
    if (it != state.end()) copy_strided(t, it->second.to(t.device()));
  }
}

void Module::set_mode(Mode mode) {
  mode_ = mode;
  for (auto& [_, child] : children_) child->set_mode(mode);
}

void Module::to(Device device) {
  for (auto& [_, t] : parameters_)
    if (t->defined() && t->device() != device) {
      const bool trainable = t->requires_grad();  // a frozen parameter stays frozen
      *t = t->detach().to(device).set_requires_grad(trainable);
    }
  for (auto& [_, t] : buffers_)
    if (t->defined()) *t = t->to(device);
  for (auto& [_, child] : children_) child->to(device);
}

void Module::to(DType dtype, KeepFloat32 keep) {
  // Keeping f32 is about half precision (mixed precision): f64 models are f64 throughout.
  const bool half = dtype == DType::f16 || dtype == DType::bf16;
  const bool keep_f32 = keeps_float32() && keep == KeepFloat32::where_asked;
  const DType target = keep_f32 && half ? DType::f32 : dtype;
  for (auto& [_, t] : parameters_)
    if (t->defined() && t->dtype() != target) {
      const bool trainable = t->requires_grad();
      *t = t->detach().to(target).set_requires_grad(trainable);
    }
  for (auto& [_, t] : buffers_)
    if (t->defined() && is_floating(t->dtype())) *t = t->to(target);
  for (auto& [_, child] : children_) child->to(dtype, keep);
}

void Module::zero_grad() {
  for (auto& [_, t] : named_parameters()) t.zero_grad();
}

void Module::str_into(std::string& out, int indent) const {
  out += type_name() + "(" + extra_repr();
  if (!children_.empty()) {
    out += "\n";
    for (const auto& [name, child] : children_) {
      out += std::string(static_cast<std::size_t>(indent + 2), ' ') + "(" +
             (name.empty() ? "module" : name) + "): ";
      child->str_into(out, indent + 2);
      out += "\n";
    }
    out += std::string(static_cast<std::size_t>(indent), ' ');
  }
  out += ")";
}

std::string Module::str() const {
  std::string out;
  str_into(out, 0);
  return out;
}

std::ostream& operator<<(std::ostream& out, const Module& module) {
  return out << module.str();
}

}  // namespace rg::nn
