#pragma once
// The elementwise rules of the collectives (parallel/reduce.h) as host/device functors: the
// host loops of reduce.cpp and the GPU kernels of reduce_kernels.cuh (the ring over NCCL) run
// this same code, so both give the same bits.

#include <cstdint>
#include <type_traits>

#include "core/dtype.h"
#include "core/macros.h"

namespace rg::parallel {

// The reduction a collective applies; mirrors ReduceOp (process_group.h) without its header.
enum class Combine : int { sum, max, min };

// a ⊕ b. Floats combine in compute_t (16-bit types rounded back after every step, as NCCL
// does); integers wrap like unsigned arithmetic (signed overflow would be undefined).
template <class T>
struct CombineFn {
  Combine how;
  RG_HOST_DEVICE T operator()(T a, T b) const {
    using C = compute_t<T>;
    using Add = std::conditional_t<std::is_same_v<T, int64_t>, uint64_t, C>;
    switch (how) {
      case Combine::sum:
        return convert<T>(static_cast<Add>(convert<C>(a)) + static_cast<Add>(convert<C>(b)));
      case Combine::max:
        return convert<C>(b) > convert<C>(a) ? b : a;
      case Combine::min:
        return convert<C>(b) < convert<C>(a) ? b : a;
    }
    return a;
  }
};

// x / divisor, the last step of an average: integers divide as i64 (truncating toward zero; a
// u8 divisor would overflow past 255 ranks), floats in compute_t.
template <class T>
struct DivideFn {
  int64_t divisor;
  RG_HOST_DEVICE T operator()(T x) const {
    using C = std::conditional_t<std::is_integral_v<T>, int64_t, compute_t<T>>;
    return convert<T>(static_cast<C>(convert<C>(x) / static_cast<C>(divisor)));
  }
};

}  // namespace rg::parallel
