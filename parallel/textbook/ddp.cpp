// Lesson 3: DDP, buckets and a communication hook (docs/learn/3-ddp.md). Every rank holds a
// replica and computes the gradient of its own share of the batch; their average over the ranks
// is the gradient of the whole batch. To overlap that communication with backward:
//
//   - the parameters go in buckets, last layer first (backward produces its gradients first);
//   - a hook on each parameter fires when its gradient is ready; when a bucket's last gradient
//     arrives, the bucket is copied into one flat buffer and handed to the communication hook,
//     which starts its allreduce — while backward goes on with the earlier layers;
//   - when backward is over, wait for every bucket and copy the averages back into .grad.
//
// Buckets are handed over in bucket order on every rank, so the ranks' collectives match.
#include "core/autograd.h"
#include "ops/ops.h"
#include "parallel/textbook/textbook.h"

namespace rg::textbook {

namespace {

class DDP : public nn::Module {
 public:
  DDP(std::shared_ptr<nn::Module> module, std::shared_ptr<parallel::ProcessGroup> group,
      int64_t bucket_cap_bytes, parallel::CommHook hook)
      : module_(std::move(module)), group_(std::move(group)), hook_(std::move(hook)) {
    register_wrapped_module(module_);
    for (Tensor p : module_->parameters()) {
      group_->broadcast(p.detach(), 0)->wait();  // every replica starts from rank 0's weights
      params_.push_back(p);
    }
    // Buckets: last parameter first, a new bucket whenever the current one is full.
    for (std::size_t k = params_.size(); k-- > 0;) {
      if (buckets_.empty() || buckets_.back().bytes >= bucket_cap_bytes) buckets_.emplace_back();
      buckets_.back().params.push_back(k);
      buckets_.back().bytes += static_cast<int64_t>(params_[k].nbytes());
    }
    for (std::size_t k = 0; k < params_.size(); ++k)
      params_[k].register_post_accumulate_hook([this, k](const Tensor&) { ready(k); });
  }

  Tensor forward(const Tensor& x) override {
    for (Bucket& b : buckets_) b.waiting = b.params.size();
    next_ = 0;
    callback_queued_ = false;
    return module_->forward(x);
  }
  std::string type_name() const override { return "textbook::DDP"; }

 private:
  struct Bucket {
    std::vector<std::size_t> params;
    int64_t bytes = 0;
    std::size_t waiting = 0;  // gradients not ready yet
    Tensor flat;
    std::shared_ptr<parallel::Work> work;
  };

  // Parameter k's gradient is ready.
  void ready(std::size_t k) {
    if (!callback_queued_) {  // once per backward: finish() when backward is over
      callback_queued_ = true;
      queue_backward_callback([this] { finish(); });
    }
    for (Bucket& b : buckets_)
      for (std::size_t i : b.params)
        if (i == k) --b.waiting;
    // Launch, in order, every bucket whose gradients are all there.
    while (next_ < buckets_.size() && buckets_[next_].waiting == 0) launch(buckets_[next_++]);
  }

  void launch(Bucket& b) {
    std::vector<Tensor> grads;
    for (std::size_t i : b.params) grads.push_back(params_[i].grad().reshape({-1}));
    b.flat = cat(grads);
    parallel::GradBucket bucket{static_cast<std::size_t>(&b - buckets_.data()), b.flat,
                                b.flat.numel()};
    b.work = hook_(*group_, bucket);
  }

  void finish() {
    for (Bucket& b : buckets_) {
      b.work->wait();
      int64_t at = 0;
      for (std::size_t i : b.params) {
        Tensor g = params_[i].grad();
        copy_strided(g, b.flat.narrow(0, at, g.numel()).view(g.shape()));
        at += g.numel();
      }
    }
  }

  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<parallel::ProcessGroup> group_;
  parallel::CommHook hook_;
  std::vector<Tensor> params_;
  std::vector<Bucket> buckets_;
  std::size_t next_ = 0;  // the next bucket to launch
  bool callback_queued_ = false;
};

}  // namespace

std::shared_ptr<parallel::Work> allreduce_average(parallel::ProcessGroup& group,
                                                  parallel::GradBucket& bucket) {
  return group.allreduce(bucket.buffer, parallel::ReduceOp::average);
}

std::shared_ptr<nn::Module> ddp(std::shared_ptr<nn::Module> module,
                                std::shared_ptr<parallel::ProcessGroup> group,
                                int64_t bucket_cap_bytes, parallel::CommHook hook) {
  return std::make_shared<DDP>(std::move(module), std::move(group), bucket_cap_bytes,
                               std::move(hook));
}

}  // namespace rg::textbook
