#include "ops/max/max.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"
#include "ops/max/max_kernel.h"

namespace rg {
namespace {

class MaxAllBackward : public Node {
 public:
  MaxAllBackward(Tensor x, Tensor y) : x_(std::move(x)), y_(std::move(y)) {}
  std::string name() const override { return "MaxAllBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {dispatch_device<Kernels::cpu_and_cuda>("max_backward", x_.device(), [&](auto on) {
      return detail::max_all_backward(on, g[0], x_, y_);
    })};
  }
  void release_saved() override { x_ = y_ = Tensor(); }

 private:
  Tensor x_, y_;
};

class MaxDimBackward : public Node {
 public:
  MaxDimBackward(Tensor indices, Shape x_shape, int64_t dim)
      : indices_(std::move(indices)), x_shape_(std::move(x_shape)), dim_(dim) {}
  std::string name() const override { return "MaxDimBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    return {dispatch_device<Kernels::cpu_and_cuda>("max_backward", indices_.device(), [&](auto on) {
      return detail::max_along_backward(on, g[0], indices_, x_shape_, dim_);
    })};
  }
  void release_saved() override { indices_ = Tensor(); }

 private:
  Tensor indices_;
  Shape x_shape_;
  int64_t dim_;
};

}  // namespace

Tensor max(const Tensor& x) {
  check_same_float("max", {x});
  RG_CHECK(x.numel() > 0, "max: the maximum of an empty tensor is undefined, got ", x.describe());
  Tensor y = dispatch_device<Kernels::cpu_and_cuda>(
      "max", x.device(), [&](auto on) { return detail::max_all(on, x.contiguous()); });
  if (needs_grad({x})) record(std::make_shared<MaxAllBackward>(saved(x), saved(y)), {x}, {&y});
  return y;
}

MaxResult max(const Tensor& x, int64_t dim, KeepDim keepdim) {
  check_same_float("max", {x});
  dim = normalize_dim(dim, x.dim(), "max");
  const Shape& shape = x.shape();
  Shape out_shape;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != dim || keepdim == KeepDim::yes) out_shape.push_back(shape[d]);
  if (x.dim() > 0) {
    RG_CHECK(shape[dim] > 0, "max: dim ", dim, " of ", x.describe(),
             " is empty; the maximum of nothing is undefined");
    if (keepdim == KeepDim::yes) out_shape[dim] = 1;
  }
  MaxResult r = dispatch_device<Kernels::cpu_and_cuda>("max", x.device(), [&](auto on) {
    return detail::max_along(on, x.contiguous(), dim, out_shape);
  });
  if (needs_grad({x}))
    record(std::make_shared<MaxDimBackward>(r.indices, shape, dim), {x}, {&r.values});
  return r;
}

}  // namespace rg
