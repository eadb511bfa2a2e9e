#pragma once
// Vectorised building blocks over contiguous runs, for the kernels of max, softmax,
// log_softmax and cross_entropy. C is float or double (16-bit rows are widened into a C
// buffer by the caller first).
//
// Why not plain loops: std::exp is a scalar libm call the compiler cannot vectorise without
// -ffast-math, and a max/sum reduction loop stays scalar because reordering FP math changes
// the result. So exp comes from Eigen (AVX-512 packets), and the reductions keep explicit
// partial results (16 maxima, 8 double sums) that GCC turns into vector instructions — the
// partial sums are also a shallow pairwise split, more accurate than one running sum.

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/dtype.h"

namespace rg::row_math {

template <class C>
using Array = Eigen::Array<C, Eigen::Dynamic, 1>;

template <class C>
Eigen::Map<const Array<C>> view(const C* p, int64_t n) {
  return Eigen::Map<const Array<C>>(p, n);
}
template <class C>
Eigen::Map<Array<C>> view(C* p, int64_t n) {
  return Eigen::Map<Array<C>>(p, n);
}

// m[i] = max(m[i], x[i]) keeping NaN (from either side): lanes side by side. A select, not
// a reduction, so the compiler vectorises it.
template <class C>
inline void max_into(C* __restrict m, const C* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) m[i] = (x[i] > m[i] || x[i] != x[i]) ? x[i] : m[i];
}

// max of p[0..n), n >= 1; NaN if any element is NaN (as PyTorch's max). Two registers of
// partial maxima updated with max_into (Eigen's maxCoeff would do, but trips GCC 12's
// -Wmaybe-uninitialized inside the AVX-512 intrinsics under -Werror).
template <class C>
C max_of(const C* p, int64_t n) {
  constexpr int64_t K = 2 * 64 / sizeof(C);
  C m = p[0];
  if (n < K) {
    for (int64_t i = 1; i < n; ++i) max_into(&m, p + i, 1);
    return m;
  }
  alignas(64) C acc[K];
  for (int64_t k = 0; k < K; ++k) acc[k] = p[k];
  for (int64_t i = K; i + K <= n; i += K) max_into(acc, p + i, K);
  max_into(acc, p + n - K, K);  // the tail, overlapping the last block: max is idempotent
  for (int64_t k = 0; k < K; ++k) max_into(&m, acc + k, 1);
  return m;
}

// Σ p[0..n) accumulated in double, from any dtype's elements.
template <class T>
double sum_as_double(const T* p, int64_t n) {
  using C = compute_t<T>;
  const int64_t n8 = n - n % 8;
  double acc[8] = {};
  for (int64_t i = 0; i < n8; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += static_cast<double>(static_cast<C>(p[i + k]));
  double tail = 0;
  for (int64_t i = n8; i < n; ++i) tail += static_cast<double>(static_cast<C>(p[i]));
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

// Σ a[i]·b[i] accumulated in double (B may be double: class weights).
template <class A, class B>
double dot_as_double(const A* a, const B* b, int64_t n) {
  const int64_t n8 = n - n % 8;
  double acc[8] = {};
  for (int64_t i = 0; i < n8; i += 8)
    for (int k = 0; k < 8; ++k)
      acc[k] += static_cast<double>(a[i + k]) * static_cast<double>(b[i + k]);
  double tail = 0;
  for (int64_t i = n8; i < n; ++i) tail += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

// Below log(smallest normal) the true exp is a denormal (or 0): returned as exact 0, so masked
// logits (−inf, −1e4) give 0 in every dtype and no slow denormals reach later math. (Eigen's
// double exp clamps its input and would return 5e-309 for exp(−inf).) A separate select loop
// rather than Eigen's select(): that one is not vectorised and cost 10x the exp itself.
template <class C>
inline C exp_floor() {
  return static_cast<C>(std::log(std::numeric_limits<C>::min()));
}

// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 intrinsics (the self-initialised
// _mm512_undefined_ps, GCC bug 105593, fixed in GCC 13) wherever Eigen's packet exp is inlined;
// the build uses -Werror, so the function that calls it silences that one warning.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// out[i] = exp(x[i] − shift(i)), every element through Eigen's packet exp. Eigen evaluates a
// Map of unknown alignment with the packet exp from the output's first aligned address on and
// with the scalar std::exp before it and after the last whole packet; the two differ in the
// last bit, so an element's value depended on where its buffer lay in memory. malloc's
// 16-byte alignment varies with what other threads allocate, and with AVX2's 8-float packets
// the same logits gave a different logsumexp from run to run (training was not reproducible
// on AVX2 machines; AVX-512's 16-float packets never vectorised CIFAR's 10 classes). Blocks of
// 64 bytes — a whole number of packets at every width — go through aligned storage instead.
template <class C, class Shift>
void exp_shifted_blocks(const C* x, Shift&& shift, C* out, int64_t n) {
  constexpr int64_t B = 64 / sizeof(C);
  using Block = Eigen::Array<C, B, 1>;
  alignas(64) C block[B];
  Eigen::Map<Block, Eigen::Aligned64> v(block);
  for (int64_t i = 0; i < n; i += B) {
    const int64_t len = std::min(B, n - i);
    for (int64_t k = 0; k < len; ++k) block[k] = x[i + k] - shift(i + k);
    for (int64_t k = len; k < B; ++k) block[k] = C(0);
    v = v.exp();
    for (int64_t k = 0; k < len; ++k) out[i + k] = block[k];
  }
  // Below log(smallest normal): exact 0 (see exp_floor). A separate loop, which vectorises.
  const C lo = exp_floor<C>();
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] - shift(i) < lo ? C(0) : out[i];
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// out[i] = exp(x[i] − shift) for a scalar shift (a row's max or logsumexp). NaN stays NaN.
template <class C>
void exp_shifted(const C* x, C shift, C* out, int64_t n) {
  exp_shifted_blocks(
      x, [shift](int64_t) { return shift; }, out, n);
}

// out[i] = exp(x[i] − shift[i]): lanes side by side, one shift each.
template <class C>
void exp_shifted(const C* x, const C* shift, C* out, int64_t n) {
  exp_shifted_blocks(
      x, [shift](int64_t i) { return shift[i]; }, out, n);
}

// Staging for 16-bit dtypes: kernels compute on C = compute_t<T>. For T == C (f32, f64) these
// hand out the tensor's own memory; for f16/bf16 they go through a C buffer of n elements.
template <class T, class C = compute_t<T>>
const C* load(const T* p, int64_t n, std::vector<C>& buf) {
  if constexpr (std::is_same_v<T, C>) {
    return p;
  } else {
    for (int64_t i = 0; i < n; ++i) buf[i] = static_cast<C>(p[i]);
    return buf.data();
  }
}
template <class T, class C = compute_t<T>>
C* out_buffer(T* p, std::vector<C>& buf) {
  if constexpr (std::is_same_v<T, C>)
    return p;
  else
    return buf.data();
}
template <class T, class C = compute_t<T>>
void store(const C* src, T* p, int64_t n) {
  if constexpr (!std::is_same_v<T, C>)
    for (int64_t i = 0; i < n; ++i) p[i] = T(src[i]);
}
// A scratch buffer of n elements, or none where T needs no staging.
template <class T, class C = compute_t<T>>
std::vector<C> staging(int64_t n) {
  return std::vector<C>(std::is_same_v<T, C> ? 0 : static_cast<std::size_t>(n));
}

}  // namespace rg::row_math
