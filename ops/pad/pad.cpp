#include "ops/pad/pad.h"

#include <algorithm>
#include <sstream>

#include "core/autograd.h"
#include "ops/elementwise/elementwise.h"

namespace rg {
namespace {

std::string list_str(const std::vector<int64_t>& v) {
  std::ostringstream out;
  out << '{';
  for (std::size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
  out << '}';
  return out.str();
}

// The padding without autograd: a tensor of `value` with x's overlapping region copied in.
Tensor pad_values(const Tensor& x, const std::vector<int64_t>& amounts, double value) {
  constexpr const char* op = "pad";
  RG_CHECK(amounts.size() % 2 == 0, op, ": pad must hold (left, right) pairs, got ", amounts.size(),
           " values ", list_str(amounts));
  RG_CHECK(static_cast<int64_t>(amounts.size()) <= 2 * x.dim(), op, ": pad ", list_str(amounts),
           " has ", amounts.size() / 2, " pairs but the input ", x.describe(), " has only ",
           x.dim(), " dimensions");
  // Any device: a fill and one strided copy, both of which have GPU kernels.
  Shape out_shape = x.shape();
  Tensor src = x.detach();
  for (std::size_t k = 0; k < amounts.size() / 2; ++k) {
    const int64_t d = x.dim() - 1 - static_cast<int64_t>(k);
    const int64_t left = amounts[2 * k], right = amounts[2 * k + 1];
    out_shape[d] = x.size(d) + left + right;
    // Sizes of 0 are refused rather than supported: the rest of ringgrad has no empty tensors.
    RG_CHECK(out_shape[d] >= 1, op, ": pad ", list_str(amounts), " gives dimension ", d,
             " of input ", x.describe(), " the size ", out_shape[d], " (must be >= 1)");
  }
  Tensor y = full(out_shape, value, {x.dtype(), x.device()});
  Tensor dst = y;
  for (std::size_t k = 0; k < amounts.size() / 2; ++k) {
    const int64_t d = x.dim() - 1 - static_cast<int64_t>(k);
    const int64_t left = amounts[2 * k], right = amounts[2 * k + 1];
    // The overlap: x's elements [max(0, −left), size − max(0, −right)) land at max(0, left).
    const int64_t from = std::max<int64_t>(0, -left);
    const int64_t length = x.size(d) - from - std::max<int64_t>(0, -right);
    if (length <= 0) return y;  // cropped past the input: nothing of x is left
    src = src.narrow(d, from, length);
    dst = dst.narrow(d, std::max<int64_t>(0, left), length);
  }
  copy_strided(dst, src);
  return y;
}

}  // namespace

Tensor pad(const Tensor& x, const std::vector<int64_t>& amounts, double value) {
  RG_CHECK(x.defined(), "pad: input is undefined");
  Tensor y = pad_values(x, amounts, value);
  if (needs_grad({x})) {
    check_same_float("pad", {x});
    // The crop (and zero padding) back to x's shape: the amounts negated.
    std::vector<int64_t> back(amounts.size());
    for (std::size_t i = 0; i < amounts.size(); ++i) back[i] = -amounts[i];
    record_backward("PadBackward", {x}, y,
                    [back = std::move(back)](const Tensor& g) { return pad_values(g, back, 0); });
  }
  return y;
}

}  // namespace rg
