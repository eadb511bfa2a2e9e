#include "ops/log/log.h"

#include "core/autograd.h"
#include "ops/div/div_functors.h"
#include "ops/elementwise/elementwise.h"
#include "ops/log/log_functors.h"

namespace rg {
namespace {

class LogBackward : public Node {
 public:
  explicit LogBackward(Tensor x) : x_(std::move(x)) {}
  std::string name() const override { return "LogBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {pointwise("log_backward", DivFn{}, g[0], x_)};
  }
  void release_saved() override { x_ = Tensor(); }

 private:
  Tensor x_;
};

}  // namespace

Tensor log(const Tensor& x) {
  check_same_float("log", {x});
  Tensor y = pointwise("log", LogFn{}, x);
  if (needs_grad({x})) record(std::make_shared<LogBackward>(saved(x)), {x}, {&y});
  return y;
}

}  // namespace rg
