#include "ops/copy/copy.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"

namespace rg {

Tensor clone(const Tensor& x) {
  RG_CHECK(x.defined(), "clone: the input is an undefined tensor");
  return x.clone();  // records CloneBackward (gx = gy)
}

Tensor copy_(const Tensor& dst, const Tensor& src) {
  RG_CHECK(dst.defined() && src.defined(), "copy_: undefined ",
           dst.defined() ? "source" : "destination", " tensor");
  if (GradMode::is_enabled()) {
    RG_CHECK(!src.requires_grad(), "copy_: the source ", src.describe(),
             " requires grad, but copy_ is not differentiable; use clone() (or cast()) for a "
             "differentiable copy, or detach() / NoGradGuard to copy data on purpose");
    RG_CHECK(!dst.requires_grad(), "copy_: the destination ", dst.describe(),
             " requires grad; an in-place copy would invalidate its autograd history (wrap "
             "parameter initialisation or loading in NoGradGuard)");
  }
  const Shape target = broadcast_shapes(dst.shape(), src.shape(), "copy_");
  RG_CHECK(target == dst.shape(), "copy_: source ", src.describe(),
           " cannot be broadcast to the destination's shape ", dst.describe());
  for (int64_t d = 0; d < dst.dim(); ++d)
    RG_CHECK(dst.strides()[d] != 0 || dst.shape()[d] <= 1, "copy_: the destination ",
             dst.describe(), " has several elements in one memory location (stride 0 in dim ", d,
             ", an expanded view); clone() it first");

  NoGradGuard no_grad;  // the expand and the aliasing clone below are plumbing
  Tensor s = src.shape() == dst.shape() ? src : src.expand(dst.shape());
  // Reading and writing the same memory in one pass could read values already overwritten
  // (e.g. x.copy_(x.transpose(0, 1))): take a private copy of the source first.
  if (s.storage().same_as(dst.storage())) s = s.clone();
  copy_strided(dst, s);
  return dst;
}

}  // namespace rg
