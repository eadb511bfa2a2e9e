// Readable printing: nested brackets like PyTorch, eliding the middle of long dims.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "core/tensor.h"

namespace rg {
namespace {

constexpr int64_t kEdgeItems = 3;          // shown at each end of a long dim
constexpr int64_t kSummariseAbove = 1000;  // elements; smaller tensors print in full

void print_value(std::ostringstream& out, double v, bool integral) {
  char buf[32];
  if (integral)
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  else if (std::isfinite(v) && v != 0 && (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-4))
    std::snprintf(buf, sizeof buf, "%.4e", v);
  else
    std::snprintf(buf, sizeof buf, "%.4f", v);
  out << buf;
}

void print_dim(std::ostringstream& out, const std::vector<double>& values, const Shape& shape,
               const Shape& strides, int64_t dim, int64_t base, bool summarise, bool integral) {
  if (dim == static_cast<int64_t>(shape.size())) {
    print_value(out, values[base], integral);
    return;
  }
  out << '[';
  const int64_t n = shape[dim];
  for (int64_t i = 0; i < n; ++i) {
    if (summarise && n > 2 * kEdgeItems && i == kEdgeItems) {
      out << "..., ";
      i = n - kEdgeItems;
    }
    if (i > 0 && !(summarise && n > 2 * kEdgeItems && i == n - kEdgeItems)) out << ", ";
    print_dim(out, values, shape, strides, dim + 1, base + i * strides[dim], summarise, integral);
  }
  out << ']';
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  const std::vector<double> values = to_vector<double>();
  std::ostringstream out;
  out << "tensor(";
  const bool integral = !is_floating(dtype());
  print_dim(out, values, shape(), contiguous_strides(shape()), 0, 0, numel() > kSummariseAbove,
            integral);
  out << ", shape=" << shape_str(shape()) << ", dtype=" << dtype() << ", device=" << device();
  if (requires_grad()) out << ", requires_grad";
  out << ')';
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) {
  return out << tensor.str();
}

}  // namespace rg
