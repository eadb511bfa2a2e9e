#pragma once
// Shared vocabulary of the reductions and losses (header only, no op of its own):
// - Reduction: how a loss reduces its per-element values (PyTorch's reduction=...);
// - KeepDim: whether sum / mean / max keep the reduced dims as size 1;
// - Lanes: a tensor seen as (outer, size, inner) around one dim, the layout every
//   "along one dim" kernel (max, softmax, log_softmax, nll_loss, cross_entropy) walks;
// - for_segments: how a parallel chunk of lanes is split into runs of consecutive inner
//   positions, so kernels reading along a non-last dim still stream contiguous memory.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace rg {

enum class Reduction { none, mean, sum };
enum class KeepDim { no, yes };

inline std::string_view reduction_name(Reduction r) {
  switch (r) {
    case Reduction::none:
      return "none";
    case Reduction::mean:
      return "mean";
    case Reduction::sum:
      return "sum";
  }
  return "?";
}

// A contiguous tensor of shape (d0, ..., d_{k-1}, size, d_{k+1}, ...) seen as
// (outer, size, inner): element (a, c, i) sits at a·size·inner + c·inner + i. A "lane" is one
// (a, i) pair: the `size` elements reduced (or normalised) together, `inner` apart in memory.
struct Lanes {
  int64_t outer = 1, size = 1, inner = 1;
  int64_t count() const { return outer * inner; }
};

inline Lanes lanes_around(const Shape& shape, int64_t dim) {
  Lanes l;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < dim) l.outer *= shape[d];
    if (d == dim) l.size = shape[d];
    if (d > dim) l.inner *= shape[d];
  }
  return l;
}

// Lanes per parallel chunk such that each chunk touches at least ~32k elements: smaller
// chunks cost more in thread hand-off than they save.
inline int64_t lane_grain(const Lanes& l) {
  return std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, l.size));
}

// Splits lanes [begin, end) (lane = a·inner + i) into runs with one `a` each and calls
// f(a, i0, i1) for inner positions [i0, i1). With inner == 1 every run is one lane.
template <class F>
void for_segments(int64_t begin, int64_t end, int64_t inner, F&& f) {
  int64_t lane = begin;
  while (lane < end) {
    const int64_t a = lane / inner, i0 = lane % inner;
    const int64_t i1 = std::min(inner, i0 + (end - lane));
    f(a, i0, i1);
    lane += i1 - i0;
  }
}

// Runs fn(begin, end) -> std::array<double, K> (K partial sums of one chunk) over parallel
// chunks of [0, n) and adds the chunks' results in index order, so the total does not depend
// on which thread finished first: the same inputs give bit-identical losses on every run.
template <std::size_t K, class F>
std::array<double, K> parallel_sum(int64_t n, int64_t grain, F&& fn) {
  std::mutex mutex;
  std::vector<std::pair<int64_t, std::array<double, K>>> parts;
  parallel_for(n, grain, [&](int64_t b, int64_t e) {
    const std::array<double, K> part = fn(b, e);
    std::lock_guard<std::mutex> lock(mutex);
    parts.emplace_back(b, part);
  });
  std::sort(parts.begin(), parts.end(),
            [](const auto& p, const auto& q) { return p.first < q.first; });
  std::array<double, K> total{};
  for (const auto& part : parts)
    for (std::size_t k = 0; k < K; ++k) total[k] += part.second[k];
  return total;
}

// max that propagates NaN, as PyTorch's max and softmax do (std::max would silently drop a
// NaN in its second argument).
template <class C>
inline C nan_max(C a, C b) {
  return (std::isnan(a) || a >= b) ? a : b;
}

}  // namespace rg
