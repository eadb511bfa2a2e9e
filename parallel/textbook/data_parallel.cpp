// Lesson 2: DataParallel (docs/learn/2-data-parallel.md). One process, one replica per device:
//
//   1. scatter    the batch along dim 0: device r gets its share
//   2. replicate  the master's parameters onto every device
//   3. forward    each replica on its share
//   4. gather     the outputs onto the first device
//
// Steps 1, 2 and 4 are autograd ops whose backward is their adjoint (parallel/
// data_parallel_functions.h): gather's backward scatters the output gradient, broadcast's
// backward sums ("reduce-adds") the replicas' parameter gradients onto the master. So a plain
// loss.backward() leaves the gradient of the whole batch in the master's parameters: no hooks.
//
// The real DataParallel runs each replica on its device's thread, forward and backward; here
// they take turns on the caller's thread, which computes the same.
#include "core/device.h"
#include "parallel/data_parallel_functions.h"
#include "parallel/textbook/textbook.h"

namespace rg::textbook {

namespace {

class DataParallel : public nn::Module {
 public:
  DataParallel(std::shared_ptr<nn::Module> master, ReplicaFactory make_replica,
               std::vector<Device> devices)
      : master_(std::move(master)), devices_(std::move(devices)) {
    register_wrapped_module(master_);  // the master's parameters are this module's
    for (std::size_t r = 0; r < devices_.size(); ++r) replicas_.push_back(make_replica());
  }

  Tensor forward(const Tensor& x) override {
    const int n = static_cast<int>(devices_.size());
    RG_CHECK(x.size(0) >= n, "textbook DataParallel: a batch of ", x.size(0), " for ", n,
             " devices");
    // 1. scatter: shares as equal as can be (10 over 3 devices: 4, 3, 3)
    const std::vector<Tensor> shares =
        parallel::scatter(x, parallel::split_sizes(x.size(0), n), devices_);
    // 2. replicate: copies[r][i] is the master's parameter i on device r
    std::vector<Tensor> params;
    for (auto& [_, p] : master_->parameter_members()) params.push_back(*p);
    const auto copies = parallel::broadcast(params, devices_);
    // 3. forward: each replica computes with its copies; replica 0 keeps the master's buffers
    //    (BatchNorm's running statistics), the others update copies that are dropped
    std::vector<Tensor> outputs;
    for (int r = 0; r < n; ++r) {
      nn::Module& replica = *replicas_[static_cast<std::size_t>(r)];
      const auto members = replica.parameter_members();
      for (std::size_t i = 0; i < members.size(); ++i) *members[i].second = copies[r][i];
      const auto buffers = replica.buffer_members();
      const auto masters = master_->buffer_members();
      for (std::size_t i = 0; i < buffers.size(); ++i)
        *buffers[i].second =
            r == 0 ? *masters[i].second : masters[i].second->to(devices_[r]).clone();
      replica.set_mode(master_->is_training() ? nn::Mode::train : nn::Mode::eval);
      const CurrentCpuDevice here(devices_[r].is_cpu() ? devices_[r] : Device::cpu());
      outputs.push_back(replica.forward(shares[static_cast<std::size_t>(r)]));
    }
    // 4. gather onto the first device
    return parallel::gather(outputs, devices_[0]);
  }
  std::string type_name() const override { return "textbook::DataParallel"; }

 private:
  std::shared_ptr<nn::Module> master_;
  std::vector<Device> devices_;
  std::vector<std::shared_ptr<nn::Module>> replicas_;
};

}  // namespace

std::shared_ptr<nn::Module> data_parallel(std::shared_ptr<nn::Module> master,
                                          ReplicaFactory make_replica,
                                          std::vector<Device> devices) {
  return std::make_shared<DataParallel>(std::move(master), std::move(make_replica),
                                        std::move(devices));
}

}  // namespace rg::textbook
