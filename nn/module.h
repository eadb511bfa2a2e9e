#pragma once
// Module: the unit models are built from. A module owns named parameters (trainable leaves),
// named buffers (state such as BatchNorm's running statistics) and named children, and
// derives from them what every training loop needs: parameters() for the optimizer,
// state_dict() / load_state_dict() for checkpoints, train()/eval(), to(device).
//
// Parameters are ordinary members (`Tensor weight_;`) registered by address, so a layer reads
// `weight_` and the registry sees the same tensor. Names nest with dots, as in PyTorch:
// "layer1.0.conv1.weight".

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace rg::nn {

enum class Mode { train, eval };
enum class LoadMode { strict, non_strict };  // non_strict: ignore missing and unexpected keys
// Whether to(f16 / bf16) honours keeps_float32() (BatchNorm) or converts everything.
enum class KeepFloat32 { where_asked, never };

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
  // The class name shown in printing and errors, e.g. "Conv2d".
  virtual std::string type_name() const = 0;

  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  std::vector<std::pair<std::string, Module*>> named_modules();  // "": this (and wrapped)
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const {
    return children_;
  }
  int64_t parameter_count() const;
  // The member tensors themselves, named and ordered as named_parameters() / named_buffers(),
  // for code that must rebind them rather than copy into them: DataParallel points each
  // replica's parameters at that step's copies of the master's (PyTorch's replicate).
  std::vector<std::pair<std::string, Tensor*>> parameter_members();
  std::vector<std::pair<std::string, Tensor*>> buffer_members();

  // Parameters and buffers by name, detached (safe to save).
  std::map<std::string, Tensor> state_dict() const;
  // Copies values into the existing tensors (so optimizers keep pointing at them). Strict
  // mode refuses any difference; the error lists every missing, unexpected and mismatched
  // key with both shapes.
  void load_state_dict(const std::map<std::string, Tensor>& state,
                       LoadMode mode = LoadMode::strict);

  void set_mode(Mode mode);  // recursively
  void train() { set_mode(Mode::train); }
  void eval() { set_mode(Mode::eval); }
  bool is_training() const { return mode_ == Mode::train; }

  // Moves parameters and buffers (recursively). Parameters stay leaves that require grad.
  void to(Device device);
  // Converts floating parameters and buffers to dtype, except in modules that opt out of half
  // precision (BatchNorm keeps f32 when converting to f16 / bf16, not f64); integer buffers are
  // left alone. KeepFloat32::never converts those modules too (AMP's O3, pure 16 bits).
  void to(DType dtype, KeepFloat32 keep = KeepFloat32::where_asked);
  virtual bool keeps_float32() const { return false; }
  void zero_grad();

  // A readable tree: "ResNet(\n  (conv1): Conv2d(3, 64, kernel=3, stride=1, padding=1)\n...".
  std::string str() const;
  virtual std::string extra_repr() const { return ""; }

  // Replaces the direct child `name` by `module` (convert_sync_batchnorm swaps BatchNorm2d
  // for SyncBatchNorm this way). The typed member a child was registered through is rebound
  // too, so forward() sees the new module; the new module must derive from the member's type.
  // A child registered by value can be replaced only in modules whose forward() calls their
  // children through the registry (Sequential): anywhere else a typed member would still point
  // at the old module, so that is an error rather than a silent no-op.
  void replace_child(const std::string& name, std::shared_ptr<Module> module);

 protected:
  // Registers a member tensor as a parameter (requires grad) or buffer under `name`.
  void register_parameter(const std::string& name, Tensor* member);
  void register_buffer(const std::string& name, Tensor* member);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module, nullptr);
    return module;
  }
  // Registers the child held by a member, by address (like register_parameter), so that
  // replace_child can rebind the member:   bn1_ = std::make_shared<BatchNorm2d>(c);
  //                                        register_module("bn1", &bn1_);
  template <class M>
  void register_module(const std::string& name, std::shared_ptr<M>* member) {
    add_child(name, *member, [member](const std::shared_ptr<Module>& replacement) {
      auto typed = std::dynamic_pointer_cast<M>(replacement);
      if (!typed) return false;
      *member = std::move(typed);
      return true;
    });
  }
  // Registers a child whose parameters, buffers and sub-modules keep their own names, without
  // a prefix: for wrappers (DistributedDataParallel), so that a checkpoint saved through the
  // wrapper loads into the plain model. At most one per module.
  void register_wrapped_module(std::shared_ptr<Module> module);
  // Whether forward() calls the children through children() (as Sequential does) rather than
  // through typed members; decides whether a child registered by value may be replaced.
  virtual bool calls_children_through_registry() const { return false; }

 private:
  // Rebinds the typed member to a replacement; false when the replacement's type does not fit.
  using Rebind = std::function<bool(const std::shared_ptr<Module>&)>;
  void add_child(const std::string& name, std::shared_ptr<Module> module, Rebind rebind);
  void collect(const std::string& prefix, bool params,
               std::vector<std::pair<std::string, Tensor>>& out) const;
  void collect_members(const std::string& prefix, bool params,
                       std::vector<std::pair<std::string, Tensor*>>& out);
  void str_into(std::string& out, int indent) const;

  std::vector<std::pair<std::string, Tensor*>> parameters_;
  std::vector<std::pair<std::string, Tensor*>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;  // "": wrapped
  std::vector<Rebind> rebind_;  // per child; empty when registered by value
  Mode mode_ = Mode::train;
};

std::ostream& operator<<(std::ostream& out, const Module& module);

}  // namespace rg::nn
