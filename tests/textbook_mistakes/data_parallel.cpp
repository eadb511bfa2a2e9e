// A mistake for the grader to catch: no replicate step (README.md). Each replica keeps its own
// weights, so backward never reaches the master from the other shares.
#include "parallel/data_parallel_functions.h"
#include "parallel/textbook/textbook.h"

namespace rg::textbook {

namespace {
class Unreplicated : public nn::Module {
 public:
  Unreplicated(std::shared_ptr<nn::Module> master, ReplicaFactory make, std::vector<Device> devices)
      : master_(std::move(master)), devices_(std::move(devices)) {
    register_wrapped_module(master_);
    for (std::size_t r = 1; r < devices_.size(); ++r) replicas_.push_back(make());
  }
  Tensor forward(const Tensor& x) override {
    const int n = static_cast<int>(devices_.size());
    const auto shares = parallel::scatter(x, parallel::split_sizes(x.size(0), n),
                                          std::vector<Device>(devices_.size(), devices_[0]));
    std::vector<Tensor> outputs{master_->forward(shares[0])};
    for (std::size_t r = 1; r < shares.size(); ++r)
      outputs.push_back(replicas_[r - 1]->forward(shares[r]));
    return parallel::gather(outputs, devices_[0]);
  }
  std::string type_name() const override { return "Unreplicated"; }

 private:
  std::shared_ptr<nn::Module> master_;
  std::vector<Device> devices_;
  std::vector<std::shared_ptr<nn::Module>> replicas_;
};
}  // namespace

std::shared_ptr<nn::Module> data_parallel(std::shared_ptr<nn::Module> master,
                                          ReplicaFactory make_replica,
                                          std::vector<Device> devices) {
  return std::make_shared<Unreplicated>(std::move(master), std::move(make_replica),
                                        std::move(devices));
}

}  // namespace rg::textbook
