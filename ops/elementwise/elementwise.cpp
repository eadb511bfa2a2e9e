#include "ops/elementwise/elementwise.h"

namespace rg {

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    RG_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", shape_str(a), " and ", shape_str(b),
             " cannot be broadcast together (dim ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void check_same_float(std::string_view op, const std::vector<Tensor>& tensors) {
  const Tensor* first = nullptr;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    RG_CHECK(is_floating(t.dtype()), op, ": expected a floating-point tensor, got ", t.describe());
    if (!first) {
      first = &t;
      continue;
    }
    RG_CHECK(t.dtype() == first->dtype(), op, ": dtype mismatch, ", first->describe(), " vs ",
             t.describe());
    RG_CHECK(t.device() == first->device(), op, ": device mismatch, ", first->describe(), " vs ",
             t.describe());
  }
}

void check_cpu(std::string_view op, const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors)
    if (t.defined() && !t.device().is_cpu()) fail_no_kernel(op, t.device());
}

namespace detail {
Shape broadcast_strides(const Tensor& t, const Shape& shape) {
  Shape strides(shape.size(), 0);
  const std::size_t lead = shape.size() - t.shape().size();
  for (std::size_t d = 0; d < t.shape().size(); ++d)
    if (t.shape()[d] != 1) strides[d + lead] = t.strides()[d];
  return strides;
}
}  // namespace detail

}  // namespace rg
