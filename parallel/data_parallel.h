#pragma once
// DataParallel: one process, one thread per device — the classic single-process data
// parallelism (PyTorch's nn.DataParallel), on GPUs or on logical cpu devices (cpu:0..N-1, see
// core/device.h), with its costs in view.
//
//   auto master = make_model();                          // on devices[0]
//   DataParallel model(master, make_model, {Device::cpu(0), Device::cpu(1)});
//   SGD opt(model.parameters(), {...});                  // the master's parameters
//   for (batch : loader) {
//     opt.zero_grad();
//     cross_entropy(model.forward(x), y).backward();     // x, y and the output on devices[0]
//     opt.step();                                        // the master's summed gradients
//   }
//
// Every forward (the DataParallel lesson, docs/learn/README.md, has the picture; docs/results.md
// our measured costs):
//   1. scatter    x along dim 0: device r gets B_r samples (split_sizes: as equal as possible,
//                 so an uneven last batch splits unevenly; a batch with fewer samples than
//                 devices uses only the first B devices);
//   2. replicate  the master's parameters (broadcast, differentiable) and buffers (copied) to
//                 every device, into that device's replica module;
//   3. forward    each replica on its own device thread, with the caller's grad mode and autocast
//                 state;
//   4. gather     the outputs onto devices[0].
// Backward flows through the same pieces as autograd nodes (data_parallel_functions.h):
// gather's backward scatters the output gradient, each replica's backward runs on its device's
// thread (one autograd node, ParallelApplyBackward, runs the N replica graphs side by side), and
// broadcast's backward reduce-adds the replicas' parameter gradients onto devices[0]. So after
// loss.backward() the master parameters hold the gradient summed over devices — the gradient of
// the loss over the whole batch — with no hooks, and the optimizer steps there.
//
// BatchNorm: by default each replica normalises with its own share's statistics (as PyTorch's
// DataParallel), and only replica 0's running statistics reach the master (it runs on the
// master's own buffers; the others update copies). BatchNormSync::across_devices makes every
// BatchNorm a SyncBatchNorm over the devices' threads: statistics of the whole batch, exactly
// one device's result.
//
// Rules: replicas are built once, by `make_replica` (a module of the same architecture: its own
// values never matter, every forward copies the master's); wrap the model last (after to(device),
// to(dtype) and any conversion). An error in a replica names the replica and its device.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"
#include "parallel/data_parallel_functions.h"
#include "parallel/device_threads.h"

namespace rg::parallel {

class SyncBatchNorm;
class ThreadGroup;

enum class BatchNormSync { per_device, across_devices };

struct DataParallelOptions {
  BatchNormSync batch_norm = BatchNormSync::per_device;
  // CPU threads each device's thread computes with; 0: the process's threads / devices (at
  // least 1). Irrelevant on GPUs.
  int threads_per_device = 0;
};

class DataParallel : public nn::Module {
 public:
  using ReplicaFactory = std::function<std::shared_ptr<nn::Module>()>;

  DataParallel(std::shared_ptr<nn::Module> module, ReplicaFactory make_replica,
               std::vector<Device> devices, DataParallelOptions options = {});
  ~DataParallel() override;

  // x: (B, ...) on devices()[0]; returns the replicas' outputs concatenated, on devices()[0].
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "DataParallel"; }

  nn::Module& module() { return *module_; }
  const std::vector<Device>& devices() const { return devices_; }
  // How many devices the last forward used (fewer than devices() for a small batch).
  int last_devices_used() const { return last_used_; }
  // The replica that runs on devices()[r] (tests look at its SyncBatchNorms).
  nn::Module& replica(int r) { return *replicas_.at(static_cast<std::size_t>(r)).module; }

  // Phase times summed since the last reset; forward-side phases are timed by forward(), the
  // backward-side ones by the autograd nodes when backward reaches them.
  const DataParallelTimes& times() const { return *times_; }
  void reset_times();
  // A few lines for people: mean time per step of each phase, and each device's current and
  // peak memory (core/allocator.h statistics).
  std::string report() const;

 private:
  struct Replica {
    std::shared_ptr<nn::Module> module;
    std::vector<Tensor*> parameters, buffers;                // its members, rebound every step
    std::vector<std::pair<nn::Module*, nn::Module*>> modes;  // (master, replica) per submodule
    std::vector<SyncBatchNorm*> sync_batch_norms;
  };
  void bind_groups(int used);
  std::vector<std::vector<Tensor>> replicate_buffers(const std::vector<Device>& devices) const;
  // Runs each replica on its thread; returns their outputs (the outer graph's handles).
  std::vector<Tensor> run_replicas(const std::vector<Tensor>& inputs,
                                   const std::vector<std::vector<Tensor>>& parameters,
                                   const std::vector<std::vector<Tensor>>& buffers);

  std::shared_ptr<nn::Module> module_;
  std::vector<Device> devices_;
  DataParallelOptions options_;
  std::vector<Replica> replicas_;
  std::vector<Tensor*> master_parameters_, master_buffers_;
  std::vector<std::string> parameter_names_;
  std::shared_ptr<DeviceThreads> threads_;  // shared with pending backward nodes
  // SyncBatchNorm's groups, one set per number of devices a step uses (built when first needed).
  std::vector<std::vector<std::shared_ptr<ThreadGroup>>> groups_;
  std::shared_ptr<DataParallelTimes> times_;
  int last_used_ = 0;
};

}  // namespace rg::parallel
