#include "ops/split/split.h"

#include <numeric>
#include <sstream>

namespace rg {
namespace {

std::string sizes_str(const std::vector<int64_t>& sizes) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << ']';
  return out.str();
}

}  // namespace

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  RG_CHECK(x.defined(), "split: undefined tensor");
  RG_CHECK(x.dim() >= 1, "split: cannot split a zero-dimensional tensor ", x.describe());
  dim = normalize_dim(dim, x.dim(), "split");
  const int64_t length = x.size(dim);
  RG_CHECK(split_size >= 1 || (split_size == 0 && length == 0),
           "split: split_size must be >= 1, got ", split_size, " for tensor ", x.describe(),
           " along dim ", dim);
  if (length == 0) return {x.narrow(dim, 0, 0)};
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < length; start += split_size)
    sizes.push_back(std::min(split_size, length - start));
  return split(x, sizes, dim);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  RG_CHECK(x.defined(), "split: undefined tensor");
  RG_CHECK(x.dim() >= 1, "split: cannot split a zero-dimensional tensor ", x.describe());
  dim = normalize_dim(dim, x.dim(), "split");
  for (int64_t s : sizes)
    RG_CHECK(s >= 0, "split: sizes must be non-negative, got ", sizes_str(sizes), " for tensor ",
             x.describe());
  const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  RG_CHECK(total == x.size(dim), "split: sizes ", sizes_str(sizes), " sum to ", total, " but dim ",
           dim, " of tensor ", x.describe(), " has size ", x.size(dim));
  std::vector<Tensor> pieces;
  pieces.reserve(sizes.size());
  int64_t start = 0;
  for (int64_t s : sizes) {
    pieces.push_back(x.narrow(dim, start, s));
    start += s;
  }
  return pieces;
}

}  // namespace rg
