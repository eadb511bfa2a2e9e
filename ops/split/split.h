#pragma once
// split: cuts a tensor along one dim into consecutive pieces, as torch.split.
//   x: (..., D, ...) -> pieces (..., D_k, ...) with D_0 + D_1 + ... = D
// The pieces are views (narrow), so they share x's storage; each is differentiable on its own
// (the core's narrow records its backward), and pieces that are not used get no gradient work.

#include <vector>

#include "core/tensor.h"

namespace rg {

// Pieces of split_size along dim, the last one smaller when split_size does not divide D.
// split_size must be >= 1 (0 is allowed only when D is 0: one empty piece, as PyTorch).
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);

// Pieces of the given sizes (>= 0, summing to D), as torch.split(x, [..]) / split_with_sizes.
// Note that split(x, {4}) picks the int overload above (C++ overload rules); pass a
// std::vector<int64_t> to mean one size list.
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);

}  // namespace rg
