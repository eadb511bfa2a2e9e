#include "parallel/host_staged_group.h"

#include <mutex>
#include <utility>
#include <vector>

#include "core/autograd.h"
#include "core/trace.h"
#include "parallel/collective_checks.h"

namespace rg::parallel {

namespace {

// In the host's own memory: what the inner group takes as it is.
bool on_host(const Tensor& t) {
  return t.device() == Device::cpu();
}

// A host buffer for `t`: pinned when t is on a GPU (DMA, no bounce through pageable memory);
// with its contents when `copy`, on the calling thread's current stream.
Tensor host_buffer(const Tensor& t, bool copy) {
  NoGradGuard no_grad;
  Tensor host = empty(t.shape(), {.dtype = t.dtype(), .device = Device::cpu()});
  if (t.device().is_cuda()) host = host.pin_memory();
  if (copy) {
    trace::Span span("collective", [&] { return "stage " + t.describe() + " to host memory"; });
    copy_strided(host, t);
  }
  return host;
}

// The inner collective's work; the results copied back (device tensor <- host buffer) once it
// has finished, on the thread that waits.
class StagedWork final : public Work {
 public:
  StagedWork(std::shared_ptr<Work> inner, std::vector<std::pair<Tensor, Tensor>> copy_back)
      : inner_(std::move(inner)), copy_back_(std::move(copy_back)) {}
  void wait() override {
    inner_->wait();  // its error, if any, leaves the device tensors alone
    finish();
  }
  bool is_completed() override {
    if (!inner_->is_completed()) return false;
    inner_->wait();  // completed: returns at once, or throws the collective's error
    finish();
    return true;
  }

 private:
  void finish() {
    std::call_once(copied_, [this] {
      NoGradGuard no_grad;
      trace::Span span("collective", "copy the result back from host memory");
      for (auto& [device_tensor, host] : copy_back_) copy_strided(device_tensor, host);
      copy_back_.clear();
    });
  }
  std::shared_ptr<Work> inner_;
  std::vector<std::pair<Tensor, Tensor>> copy_back_;
  std::once_flag copied_;
};

}  // namespace

HostStagedGroup::HostStagedGroup(std::shared_ptr<ProcessGroup> inner) : inner_(std::move(inner)) {
  RG_CHECK(inner_ != nullptr, "HostStagedGroup: the inner group is null");
}

std::shared_ptr<Work> HostStagedGroup::allreduce(const Tensor& tensor, ReduceOp op) {
  check_defined("allreduce", {tensor});
  if (on_host(tensor)) return inner_->allreduce(tensor, op);
  Tensor host = host_buffer(tensor, true);
  return std::make_shared<StagedWork>(inner_->allreduce(host, op),
                                      std::vector<std::pair<Tensor, Tensor>>{{tensor, host}});
}

std::shared_ptr<Work> HostStagedGroup::broadcast(const Tensor& tensor, int root) {
  check_defined("broadcast", {tensor});
  if (on_host(tensor)) return inner_->broadcast(tensor, root);
  Tensor host = host_buffer(tensor, rank() == root);
  return std::make_shared<StagedWork>(inner_->broadcast(host, root),
                                      std::vector<std::pair<Tensor, Tensor>>{{tensor, host}});
}

std::shared_ptr<Work> HostStagedGroup::allgather(const Tensor& output, const Tensor& input) {
  check_defined("allgather", {output, input});
  if (on_host(output) && on_host(input)) return inner_->allgather(output, input);
  std::vector<std::pair<Tensor, Tensor>> back;
  const Tensor in = on_host(input) ? input : host_buffer(input, true);
  Tensor out = output;
  if (!on_host(output)) {
    out = host_buffer(output, false);
    back.emplace_back(output, out);
  }
  return std::make_shared<StagedWork>(inner_->allgather(out, in), std::move(back));
}

std::shared_ptr<Work> HostStagedGroup::reduce_scatter(const Tensor& output, const Tensor& input,
                                                      ReduceOp op) {
  check_defined("reduce_scatter", {output, input});
  if (on_host(output) && on_host(input)) return inner_->reduce_scatter(output, input, op);
  std::vector<std::pair<Tensor, Tensor>> back;
  const Tensor in = on_host(input) ? input : host_buffer(input, true);
  Tensor out = output;
  if (!on_host(output)) {
    out = host_buffer(output, false);
    back.emplace_back(output, out);
  }
  return std::make_shared<StagedWork>(inner_->reduce_scatter(out, in, op), std::move(back));
}

}  // namespace rg::parallel
