// Lesson 6: ZeRO-1 (docs/learn/6-zero.md). Under plain data parallelism every rank keeps the
// whole optimizer state (SGD's momentum: one more copy of the model) and every rank computes
// the same update. ZeRO-1 shares that work out. Lay every parameter end to end in one flat
// vector, padded to N equal blocks; rank r owns block r:
//
//   1. reduce-scatter  the gradients (average): rank r receives block r of the averaged
//                      gradient — the first half of a ring allreduce
//   2. update          rank r steps only block r's elements, with block r's momentum: 1/N of
//                      the state and of the work
//   3. all-gather      every rank's updated block: every rank has every parameter again — the
//                      ring's second half
//
// The bytes on the wire are an allreduce's; the optimizer state shrinks N-fold.
#include "core/autograd.h"
#include "ops/ops.h"
#include "parallel/textbook/textbook.h"

namespace rg::textbook {

namespace {

class Zero : public Zero1 {
 public:
  Zero(std::vector<Tensor> params, std::shared_ptr<parallel::ProcessGroup> group, double lr,
       double momentum)
      : params_(std::move(params)), group_(std::move(group)), lr_(lr), momentum_(momentum) {
    int64_t total = 0;
    for (const Tensor& p : params_) total += p.numel();
    const int64_t n = group_->size();
    block_ = (total + n - 1) / n;
    like_ = {params_.at(0).dtype(), params_[0].device()};
    buffer_ = zeros({block_}, like_);  // this rank's block of the momentum: all the state it keeps
  }

  void step() override {
    NoGradGuard no_grad;
    const int64_t n = group_->size(), r = group_->rank();
    Tensor grads = zeros({n * block_}, like_), weights = zeros({n * block_}, like_);
    int64_t at = 0;  // each parameter's place in the flat vectors
    for (const Tensor& p : params_) {
      copy_strided(grads.narrow(0, at, p.numel()), p.grad().reshape({-1}));
      copy_strided(weights.narrow(0, at, p.numel()), p.detach().reshape({-1}));
      at += p.numel();
    }
    // 1. reduce-scatter: g = block r of the gradient averaged over the ranks
    Tensor g = empty({block_}, like_);
    group_->reduce_scatter(g, grads, parallel::ReduceOp::average)->wait();
    // 2. SGD with momentum on block r only
    buffer_ = buffer_ * momentum_ + g;
    const Tensor mine = weights.narrow(0, r * block_, block_) - buffer_ * lr_;
    // 3. all-gather: every rank's block, then back into the parameters
    group_->allgather(weights, mine.contiguous())->wait();
    at = 0;
    for (const Tensor& p : params_) {
      copy_strided(p.detach(), weights.narrow(0, at, p.numel()).view(p.shape()));
      at += p.numel();
    }
  }

  int64_t state_elements() const override { return block_; }

 private:
  std::vector<Tensor> params_;
  std::shared_ptr<parallel::ProcessGroup> group_;
  double lr_, momentum_;
  int64_t block_ = 0;
  TensorOptions like_;  // the parameters' dtype and device
  Tensor buffer_;       // momentum
};

}  // namespace

std::unique_ptr<Zero1> zero1(std::vector<Tensor> params,
                             std::shared_ptr<parallel::ProcessGroup> group, double lr,
                             double momentum) {
  return std::make_unique<Zero>(std::move(params), std::move(group), lr, momentum);
}

}  // namespace rg::textbook
