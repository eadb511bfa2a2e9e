// CPU kernel of sum and mean.
//
// Accumulation rule: every floating dtype accumulates in double. A float accumulator loses
// about log2(n) bits over n terms (and stops moving once the running sum is 2^24 times larger
// than a term: summing a million 1e-3 values in float is off in the 3rd digit); a double
// accumulator keeps f32 sums correctly rounded for any realistic n at the cost of a widening
// convert, which is free next to the memory traffic. For f64 input, the 8 independent partial
// sums of row_math::sum_as_double are an 8-way pairwise split that keeps the error small.
#include <algorithm>

#include "core/dispatch.h"
#include "core/strided_loop.h"
#include "core/thread_pool.h"
#include "ops/elementwise/elementwise.h"
#include "ops/mul/mul_functors.h"
#include "ops/reduction/row_math.h"
#include "ops/sum/sum_kernel.h"

namespace rg::detail {
namespace {

constexpr int64_t kGrain = 1 << 15;  // elements per parallel chunk, at least

template <class T>
inline double to_double(T v) {
  return static_cast<double>(static_cast<compute_t<T>>(v));
}

// Σ p[0..n) in double with 8 partial sums (vectorised, and a shallow pairwise split).
using row_math::sum_as_double;

// Σ of all n elements, split across threads (partials combined in a fixed order).
template <class T>
double sum_all(const T* p, int64_t n) {
  return parallel_sum<1>(n, kGrain, [&](int64_t b, int64_t e) {
    return std::array<double, 1>{sum_as_double(p + b, e - b)};
  })[0];
}

// Dims of size 1 dropped and neighbours with the same role merged: [N, C, H, W] reduced over
// {0, 2, 3} becomes [N | C | H·W] = reduced, kept, reduced.
struct Group {
  int64_t size;
  bool reduced;
};

std::vector<Group> coalesce(const Shape& shape, const std::vector<bool>& reduced) {
  std::vector<Group> groups;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!groups.empty() && groups.back().reduced == reduced[d])
      groups.back().size *= shape[d];
    else
      groups.push_back({shape[d], reduced[d]});
  }
  return groups;
}

}  // namespace

Tensor sum_reduce(std::string_view op, const Tensor& x, const ReducePlan& plan, double scale) {
  return dispatch_device<Kernels::cpu_and_cuda>(
      op, x.device(), [&](auto on) { return sum_reduce(on, x, plan, scale); });
}

Tensor sum_reduce(OnCpu, const Tensor& x_in, const ReducePlan& plan, double scale) {
  const Tensor x = x_in.contiguous();
  Tensor out = empty(plan.out_shape, {x.dtype(), x.device()});
  if (x.numel() == 0) {
    fill_(out, 0.0 * scale);  // sum of nothing is 0; mean of nothing is 0·(1/0) = NaN
    return out;
  }
  const std::vector<Group> groups = coalesce(x.shape(), plan.reduced);
  const int64_t n_out = out.numel();
  const int64_t count = plan.count;
  dispatch_floating(x.dtype(), "sum", [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.data_ptr());
    T* po = static_cast<T*>(out.data_ptr());
    if (n_out == 1) {
      po[0] = convert<T>(sum_all(px, x.numel()) * scale);
      return;
    }
    const auto n_reduced =
        std::count_if(groups.begin(), groups.end(), [](const Group& g) { return g.reduced; });
    if (n_reduced == 1 && !groups.back().reduced) {
      // (outer, R, inner) with inner > 1, e.g. a sum over the batch of (N, C): lanes of
      // consecutive inner positions accumulate whole rows, so memory is read in order.
      int64_t outer = 1, r = 1;
      std::size_t g = 0;
      for (; !groups[g].reduced; ++g) outer *= groups[g].size;
      r = groups[g].size;
      const int64_t inner = n_out / outer;
      parallel_for(n_out, std::max<int64_t>(1, kGrain / r), [&](int64_t b, int64_t e) {
        std::vector<double> acc(static_cast<std::size_t>(std::min(inner, e - b)));
        for_segments(b, e, inner, [&](int64_t a, int64_t i0, int64_t i1) {
          std::fill(acc.begin(), acc.begin() + (i1 - i0), 0.0);
          const T* base = px + a * r * inner;
          for (int64_t k = 0; k < r; ++k) {
            const T* row = base + k * inner;
            for (int64_t i = i0; i < i1; ++i) acc[i - i0] += to_double(row[i]);
          }
          for (int64_t i = i0; i < i1; ++i) po[a * inner + i] = convert<T>(acc[i - i0] * scale);
        });
      });
      return;
    }
    // General case: kept groups walked with strided_loop; for each output, the reduced groups
    // are an offset table plus, when the innermost group is reduced, a contiguous run
    // (the H·W of a per-channel sum over N, H, W).
    Shape sizes;
    for (const Group& g : groups) sizes.push_back(g.size);
    const Shape strides = contiguous_strides(sizes);
    std::size_t ng = groups.size();
    int64_t run = 1;
    if (ng > 0 && groups.back().reduced) run = groups[--ng].size;
    Shape kept_sizes, kept_strides, red_sizes, red_strides;
    for (std::size_t g = 0; g < ng; ++g) {
      (groups[g].reduced ? red_sizes : kept_sizes).push_back(sizes[g]);
      (groups[g].reduced ? red_strides : kept_strides).push_back(strides[g]);
    }
    std::vector<int64_t> offsets;
    offsets.reserve(static_cast<std::size_t>(numel_of(red_sizes)));
    strided_loop<1>(red_sizes, {&red_strides}, 0, numel_of(red_sizes),
                    [&](const std::array<int64_t, 1>& o) { offsets.push_back(o[0]); });
    parallel_for(n_out, std::max<int64_t>(1, kGrain / count), [&](int64_t b, int64_t e) {
      int64_t i = b;
      strided_loop<1>(kept_sizes, {&kept_strides}, b, e, [&](const std::array<int64_t, 1>& o) {
        double acc = 0;
        for (int64_t off : offsets) acc += sum_as_double(px + o[0] + off, run);
        po[i++] = convert<T>(acc * scale);
      });
    });
  });
  return out;
}

Tensor sum_backward(const Tensor& gy, const ReducePlan& plan, double scale) {
  // A stride-0 view of gy over the reduced dims; the pointwise loop writes it out contiguous.
  return pointwise("sum_backward", MulScalarFn{scale},
                   gy.reshape(plan.kept_shape).expand(plan.in_shape));
}

}  // namespace rg::detail
