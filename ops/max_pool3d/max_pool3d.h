#pragma once
// max_pool3d: the maximum over each (dilated) 3-D window, with the position it came from, as
// torch.nn.functional.max_pool3d(..., return_indices=True) (ceil_mode=False).
//   x: (N, C, D, H, W) -> output: (N, C, OD, OH, OW), indices: (N, C, OD, OH, OW) i64
//   OD = ⌊(D + 2·PD − DD·(KD − 1) − 1) / SD⌋ + 1   (OH, OW alike)
//   output[n, c, i, j, k] = max over a, b, e of
//                           x[n, c, i·SD − PD + a·DD, j·SH − PH + b·DH, k·SW − PW + e·DW]
// Padding is implicit −inf (never selected). indices hold the flat position (id·H + ih)·W + iw
// of the maximum inside its (D, H, W) volume, as PyTorch's: the first maximum in window order
// wins ties; a NaN wins over any number (PyTorch propagates NaN).
// Backward: gx[n, c, indices[n, c, i, j, k]] += gy[n, c, i, j, k]; the node keeps only the
// indices and the window. On the GPU too (max_pool3d_kernels.cuh).

#include <cstdint>
#include <ostream>

#include "core/tensor.h"

namespace rg {

// A (d, h, w) triple; one integer means the same value on all three axes, as PyTorch's
// int-or-tuple arguments: max_pool3d(x, 2) or max_pool3d(x, {1, 2, 2}).
struct Pool3dSize {
  int64_t d = 0, h = 0, w = 0;
  constexpr Pool3dSize() = default;
  constexpr Pool3dSize(int64_t s) : d(s), h(s), w(s) {}  // NOLINT(google-explicit-constructor)
  constexpr Pool3dSize(int64_t d_, int64_t h_, int64_t w_) : d(d_), h(h_), w(w_) {}
  int64_t operator[](int a) const { return a == 0 ? d : a == 1 ? h : w; }
  friend bool operator==(const Pool3dSize&, const Pool3dSize&) = default;
};

inline std::ostream& operator<<(std::ostream& out, const Pool3dSize& s) {
  return out << '(' << s.d << ", " << s.h << ", " << s.w << ')';
}

struct MaxPool3dResult {
  Tensor output;   // differentiable
  Tensor indices;  // i64, no gradient
};

// stride {} (zero) means stride = kernel_size, as PyTorch's stride=None.
// Checks (as PyTorch): 5-D floating input; kernel, stride, dilation > 0; 0 <= padding <=
// kernel_size / 2; an output of at least 1 × 1 × 1.
MaxPool3dResult max_pool3d(const Tensor& x, Pool3dSize kernel_size, Pool3dSize stride = {},
                           Pool3dSize padding = 0, Pool3dSize dilation = 1);

}  // namespace rg
