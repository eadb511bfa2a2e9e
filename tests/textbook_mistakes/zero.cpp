// A mistake for the grader to catch: each rank steps with its own gradients, never averaged
// (README.md) — and keeps the whole momentum, too.
#include "core/autograd.h"
#include "ops/ops.h"
#include "parallel/textbook/textbook.h"

namespace rg::textbook {

namespace {
class Local : public Zero1 {
 public:
  Local(std::vector<Tensor> params, double lr, double momentum)
      : params_(std::move(params)), lr_(lr), momentum_(momentum) {
    for (const Tensor& p : params_) buffers_.push_back(zeros(p.shape(), {.dtype = p.dtype()}));
  }
  void step() override {
    NoGradGuard no_grad;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      buffers_[i] = buffers_[i] * momentum_ + params_[i].grad();
      copy_strided(params_[i].detach(), params_[i].detach() - buffers_[i] * lr_);
    }
  }
  int64_t state_elements() const override {
    int64_t n = 0;
    for (const Tensor& b : buffers_) n += b.numel();
    return n;
  }

 private:
  std::vector<Tensor> params_, buffers_;
  double lr_, momentum_;
};
}  // namespace

std::unique_ptr<Zero1> zero1(std::vector<Tensor> params, std::shared_ptr<parallel::ProcessGroup>,
                             double lr, double momentum) {
  return std::make_unique<Local>(std::move(params), lr, momentum);
}

}  // namespace rg::textbook
