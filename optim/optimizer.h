#pragma once
// Optimizer: the base of SGD and AdamW. It holds parameter groups (parameters sharing one set of
// hyperparameters), per-parameter state (momentum buffers, moments, step counters) and turns
// that state into a safetensors-ready StateDict and back.
//
// Parameters are numbered 0, 1, 2, ... across the groups in order (as in PyTorch); the index
// names a parameter's state in a checkpoint:
//   tensors  "optim.state.<i>.<buffer>"   e.g. "optim.state.3.momentum_buffer"
//   metadata "optim.type"                  "SGD" / "AdamW"
//            "optim.param_groups"          JSON: [{"lr": 0.1, ..., "params": [0, 1]}, ...]
//            "optim.state.<i>.step"        JSON integer (optimizers that count steps)
// A parameter whose .grad is undefined is skipped by step() (its state is left untouched).

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace rg {

// What state_dict() returns and load_state_dict() takes: save it with
// save_safetensors(path, sd.tensors, sd.metadata); keys outside "optim." are ignored on load,
// so one checkpoint file can also hold the model's parameters and the scheduler's metadata.
struct StateDict {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Parameters sharing one set of options (SGDOptions, AdamWOptions).
template <class Options>
struct ParamGroup {
  std::vector<Tensor> params;
  Options options;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter whose .grad is defined, in place.
  virtual void step() = 0;
  // Drops every parameter's gradient (PyTorch's zero_grad(set_to_none=True)): the next backward
  // writes fresh gradients instead of adding to stale ones. (ZeRO's also drops the model's.)
  virtual void zero_grad();

  // "SGD", "AdamW": also the checkpoint's "optim.type".
  const std::string& name() const { return name_; }
  virtual std::size_t num_groups() const = 0;
  virtual const std::vector<Tensor>& params(std::size_t group) const = 0;
  // Every parameter, in index order (group by group).
  std::vector<Tensor> all_params() const;
  // The learning rate of one group; LR schedulers drive it through set_lr.
  virtual double lr(std::size_t group) const = 0;
  virtual void set_lr(std::size_t group, double lr) = 0;

  // A snapshot (tensors are copies) of the hyperparameters and per-parameter state.
  virtual StateDict state_dict() const;
  // Restores hyperparameters and state saved by state_dict() of the same optimizer type over
  // parameters of the same number and shapes. Validates everything before changing anything;
  // throws rg::Error naming the key at fault. State tensors are copied and converted to each
  // parameter's dtype and device.
  virtual void load_state_dict(const StateDict& state);

  // ---- what ZeRO (parallel/zero.h) needs to shard an optimizer ------------------------------
  // The same optimizer — type, groups and their hyperparameters — over other tensors (one list
  // per group, as many groups), without state. Throws for an optimizer that cannot be rebuilt
  // that way.
  virtual std::unique_ptr<Optimizer> over(std::vector<std::vector<Tensor>> groups) const;
  // Takes `other`'s hyperparameters, group by group (an LR schedule drives `other`).
  void copy_hyperparameters(const Optimizer& other);
  // The bytes of state held (momentum buffers, moments): what ZeRO divides by the ranks.
  virtual int64_t state_bytes() const;
  // The names of the buffers a parameter of `group` holds once updated ("momentum_buffer").
  std::vector<std::string> buffer_names(std::size_t group) const { return state_names(group); }
  // Drops the per-parameter state (after ZeRO took its shard of it).
  void clear_state();

  // ---- what a captured step needs (train/step_graph.h, --cuda-graphs) -----------------------
  // Keeps the learning rates as device scalars (one f64 per group, on `device`) that the
  // update's kernels read instead of a host value, so that a step captured in a CUDA graph uses
  // each replay's rate. From then on the caller writes them before every step
  // (write_lr_to_device). Throws for an optimizer whose update takes its scalars from the host
  // (AdamW: its bias corrections too), naming it.
  void keep_lr_on_device(const Device& device);
  // Queues the copy of the current rates into those scalars, without the host waiting; nothing
  // when they are not kept.
  void write_lr_to_device();

 protected:
  explicit Optimizer(std::string name) : name_(std::move(name)) {}

  struct ParamState {
    std::map<std::string, Tensor> buffers;  // each shaped like its parameter
    int64_t step = 0;                       // updates done (optimizers that count steps)
  };

  // Checks the parameters (defined, floating, leaf, no duplicates, at least one) and sizes the
  // state; derived constructors call it once their groups are in place.
  void init_state();
  // Index of the first parameter of `group`.
  std::size_t first_index(std::size_t group) const;
  ParamState& state(std::size_t index) { return state_[index]; }

  // Checks a parameter and its gradient before an update (same device, shape and dtype).
  void check_grad(std::size_t index, const Tensor& param, const Tensor& grad) const;

  // ---- what a concrete optimizer tells the checkpoint code ---------------------------------
  // The group's hyperparameters as a JSON object (without "params").
  virtual nlohmann::json options_json(std::size_t group) const = 0;
  // Reads them back, validating like the constructor; may throw nlohmann::json exceptions,
  // which load_state_dict turns into an rg::Error naming the group.
  virtual void load_options_json(std::size_t group, const nlohmann::json& options) = 0;
  // The buffers a parameter of `group` holds once it has been updated at least once.
  virtual std::vector<std::string> state_names(std::size_t group) const = 0;
  // Whether ParamState::step is meaningful (saved as "optim.state.<i>.step").
  virtual bool counts_steps() const = 0;
  // Whether step() reads the rates keep_lr_on_device keeps (lr_on_device).
  virtual bool reads_lr_on_device() const { return false; }
  // The group's rate on the device (keep_lr_on_device), or null: what the update reads.
  const double* lr_on_device(std::size_t group) const;

 private:
  std::string name_;
  Tensor lr_on_device_;            // (groups) f64; undefined unless keep_lr_on_device
  std::vector<ParamState> state_;  // by parameter index
};

// An optimizer over groups of one Options type: the group bookkeeping SGD and AdamW share.
// Options must have a `double lr`.
template <class Options>
class GroupedOptimizer : public Optimizer {
 public:
  std::size_t num_groups() const override { return groups_.size(); }
  const std::vector<Tensor>& params(std::size_t group) const override {
    return groups_.at(group).params;
  }
  double lr(std::size_t group) const override { return groups_.at(group).options.lr; }
  void set_lr(std::size_t group, double lr) override {
    Options options = groups_.at(group).options;
    options.lr = lr;
    validate(options);
    groups_[group].options = options;
  }
  // A group's options; change them with set_options (validated).
  const Options& options(std::size_t group) const { return groups_.at(group).options; }
  void set_options(std::size_t group, const Options& options) {
    validate(options);
    groups_.at(group).options = options;
  }

 protected:
  GroupedOptimizer(std::string name, std::vector<ParamGroup<Options>> groups)
      : Optimizer(std::move(name)), groups_(std::move(groups)) {}
  // Throws rg::Error for invalid hyperparameters; derived constructors call it on every group.
  virtual void validate(const Options& options) const = 0;

  std::vector<ParamGroup<Options>> groups_;
};

}  // namespace rg
