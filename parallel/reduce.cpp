#include "parallel/reduce.h"

#include <type_traits>

#include "core/dispatch.h"

namespace rg::parallel {

namespace {
template <class T, class Combine>
void combine(T* acc, const T* in, int64_t n, Combine f) {
  for (int64_t i = 0; i < n; ++i) acc[i] = f(acc[i], in[i]);
}

template <class T>
void reduce_typed(T* acc, const T* in, int64_t n, ReduceOp op) {
  using C = compute_t<T>;
  // Signed overflow is undefined in C++; unsigned arithmetic wraps, which is what MPI_SUM
  // does in practice, so i64 sums are computed as u64.
  using Add = std::conditional_t<std::is_same_v<T, int64_t>, uint64_t, C>;
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::average:
      combine(acc, in, n, [](T a, T b) {
        return convert<T>(static_cast<Add>(convert<C>(a)) + static_cast<Add>(convert<C>(b)));
      });
      return;
    case ReduceOp::max:
      combine(acc, in, n, [](T a, T b) { return convert<C>(b) > convert<C>(a) ? b : a; });
      return;
    case ReduceOp::min:
      combine(acc, in, n, [](T a, T b) { return convert<C>(b) < convert<C>(a) ? b : a; });
      return;
  }
}
}  // namespace

void reduce_into(void* acc, const void* in, int64_t n, DType dtype, ReduceOp op) {
  dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    reduce_typed(static_cast<T*>(acc), static_cast<const T*>(in), n, op);
  });
}

void divide_by(void* data, int64_t n, DType dtype, int64_t divisor) {
  dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    // Integers divide as i64 (a u8 divisor would overflow past 255 ranks).
    using C = std::conditional_t<std::is_integral_v<T>, int64_t, compute_t<T>>;
    T* p = static_cast<T*>(data);
    const C d = static_cast<C>(divisor);
    for (int64_t i = 0; i < n; ++i) p[i] = convert<T>(static_cast<C>(convert<C>(p[i]) / d));
  });
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::average:
      return "average";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
  }
  return "?";
}

}  // namespace rg::parallel
