#include "parallel/reduce.h"

#include "core/dispatch.h"
#include "parallel/reduce_functors.h"

namespace rg::parallel {

Combine combine_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::average:
      return Combine::sum;
    case ReduceOp::max:
      return Combine::max;
    case ReduceOp::min:
      return Combine::min;
  }
  fail("reduce: invalid ReduceOp ", static_cast<int>(op));
}

void reduce_into(void* acc, const void* in, int64_t n, DType dtype, ReduceOp op) {
  combine_into(acc, in, n, dtype, combine_of(op));
}

void combine_into(void* acc, const void* in, int64_t n, DType dtype, Combine how) {
  dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    const CombineFn<T> f{how};
    T* a = static_cast<T*>(acc);
    const T* b = static_cast<const T*>(in);
    for (int64_t i = 0; i < n; ++i) a[i] = f(a[i], b[i]);
  });
}

void divide_by(void* data, int64_t n, DType dtype, int64_t divisor) {
  dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    const DivideFn<T> f{divisor};
    T* p = static_cast<T*>(data);
    for (int64_t i = 0; i < n; ++i) p[i] = f(p[i]);
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
