#include "parallel/comm_hooks.h"

#include <mutex>

#include "core/autograd.h"
#include "ops/ops.h"

namespace rg::parallel {

namespace {

class ThenWork final : public Work {
 public:
  ThenWork(std::shared_ptr<Work> work, std::function<void()> after)
      : work_(std::move(work)), after_(std::move(after)) {}
  void wait() override {
    work_->wait();
    std::call_once(once_, after_);
  }
  bool is_completed() override { return work_->is_completed(); }

 private:
  std::shared_ptr<Work> work_;
  std::function<void()> after_;
  std::once_flag once_;
};

std::shared_ptr<Work> compressed(ProcessGroup& group, GradBucket& bucket, DType wire) {
  NoGradGuard no_grad;
  const Tensor on_wire = mul(bucket.buffer, 1.0 / group.size()).to(wire);
  const Tensor buffer = bucket.buffer;
  return then(group.allreduce(on_wire, ReduceOp::sum),
              [on_wire, buffer] { copy_strided(buffer, on_wire); });
}

}  // namespace

std::shared_ptr<Work> allreduce_hook(ProcessGroup& group, GradBucket& bucket) {
  return group.allreduce(bucket.buffer, ReduceOp::average);
}

std::shared_ptr<Work> fp16_compress_hook(ProcessGroup& group, GradBucket& bucket) {
  return compressed(group, bucket, DType::f16);
}

std::shared_ptr<Work> bf16_compress_hook(ProcessGroup& group, GradBucket& bucket) {
  return compressed(group, bucket, DType::bf16);
}

CommHook compression_hook(GradCompression compression) {
  switch (compression) {
    case GradCompression::fp16:
      return fp16_compress_hook;
    case GradCompression::bf16:
      return bf16_compress_hook;
    case GradCompression::none:
      break;
  }
  return allreduce_hook;
}

std::shared_ptr<Work> then(std::shared_ptr<Work> work, std::function<void()> after) {
  return std::make_shared<ThenWork>(std::move(work), std::move(after));
}

}  // namespace rg::parallel
