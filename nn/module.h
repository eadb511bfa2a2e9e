#pragma once
// Module: the unit models are built from. A module owns named parameters (trainable leaves),
// named buffers (state such as BatchNorm's running statistics) and named children, and
// derives from them what every training loop needs: parameters() for the optimizer,
// state_dict() / load_state_dict() for checkpoints, train()/eval(), to(device).
//
// Parameters are ordinary members (`Tensor weight_;`) registered by address, so a layer reads
// `weight_` and the registry sees the same tensor. Names nest with dots, as in PyTorch:
// "layer1.0.conv1.weight".

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace rg::nn {

enum class Mode { train, eval };
enum class LoadMode { strict, non_strict };  // non_strict: ignore missing and unexpected keys

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
  std::vector<std::pair<std::string, Module*>> named_modules();  // "" is this module
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const {
    return children_;
  }
  int64_t parameter_count() const;

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
  // Converts floating parameters and buffers to dtype, except in modules that opt out
  // (BatchNorm keeps f32 under mixed precision); integer buffers are left alone.
  void to(DType dtype);
  virtual bool keeps_float32() const { return false; }
  void zero_grad();

  // A readable tree: "ResNet(\n  (conv1): Conv2d(3, 64, kernel=3, stride=1, padding=1)\n...".
  std::string str() const;
  virtual std::string extra_repr() const { return ""; }

 protected:
  // Registers a member tensor as a parameter (requires grad) or buffer under `name`.
  void register_parameter(const std::string& name, Tensor* member);
  void register_buffer(const std::string& name, Tensor* member);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void collect(const std::string& prefix, bool params,
               std::vector<std::pair<std::string, Tensor>>& out) const;
  void str_into(std::string& out, int indent) const;

  std::vector<std::pair<std::string, Tensor*>> parameters_;
  std::vector<std::pair<std::string, Tensor*>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  Mode mode_ = Mode::train;
};

std::ostream& operator<<(std::ostream& out, const Module& module);

}  // namespace rg::nn
