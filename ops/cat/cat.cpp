#include "ops/cat/cat.h"

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"

namespace rg {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  RG_CHECK(!tensors.empty(), "cat: expected a non-empty list of tensors");
  const Tensor& first = tensors[0];
  for (std::size_t k = 0; k < tensors.size(); ++k)
    RG_CHECK(tensors[k].defined(), "cat: tensor ", k, " is undefined");
  RG_CHECK(first.dim() >= 1, "cat: zero-dimensional tensor ", first.describe(),
           " cannot be concatenated");
  dim = normalize_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();
  shape[dim] = 0;
  std::vector<int64_t> sizes;
  sizes.reserve(tensors.size());
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const Tensor& t = tensors[k];
    RG_CHECK(t.dtype() == first.dtype(), "cat: dtype mismatch, tensor 0 is ", first.describe(),
             ", tensor ", k, " is ", t.describe());
    RG_CHECK(t.device() == first.device(), "cat: device mismatch, tensor 0 is ", first.describe(),
             ", tensor ", k, " is ", t.describe());
    RG_CHECK(t.dim() == first.dim(), "cat: tensors must have the same number of dims, tensor 0 is ",
             first.describe(), ", tensor ", k, " is ", t.describe());
    for (int64_t d = 0; d < t.dim(); ++d)
      RG_CHECK(d == dim || t.size(d) == first.size(d), "cat: sizes must match except in dim ", dim,
               ", tensor 0 is ", first.describe(), ", tensor ", k, " is ", t.describe(), " (dim ",
               d, ")");
    sizes.push_back(t.size(dim));
    shape[dim] += t.size(dim);
  }
  Tensor y = empty(shape, {first.dtype(), first.device()});
  // Each piece is one strided copy into its slice of y: copy_strided picks the device's kernel
  // (a parallel loop on the CPU, core/cuda/copy_kernels.cuh on a GPU), so cat has no kernel of
  // its own.
  int64_t start = 0;
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    copy_strided(y.narrow(dim, start, sizes[k]), tensors[k].detach());
    start += sizes[k];
  }
  if (needs_grad(tensors))
    record_backward("CatBackward", tensors, y, [dim, sizes = std::move(sizes)](const Tensor& g) {
      Grads gx;
      gx.reserve(sizes.size());
      int64_t offset = 0;
      for (int64_t size : sizes) {
        gx.push_back(g.narrow(dim, offset, size));
        offset += size;
      }
      return gx;
    });
  return y;
}

}  // namespace rg
