#pragma once
// A CUDA execution emulator: runs a kernel's own source on CPU threads, so that every custom
// kernel of ringgrad is executed and checked on machines without a GPU. Only translation units
// compiled by the host compiler include it (through core/cuda/kernel.h); nvcc never sees it.
//
// What it does:
//   - one OS thread per CUDA thread of a block; the blocks of a grid run one after another with
//     the same team of threads; `threadIdx`, `blockIdx`, `blockDim`, `gridDim` are thread-local;
//   - `__syncthreads()` is a barrier over the block's threads (a thread that has returned counts
//     as arrived, as an exited thread does on the GPU);
//   - `__shared__` variables are function-local statics (one copy, used by the one block that
//     runs); dynamic shared memory is `RG_DYNAMIC_SHARED(T, name)`, one buffer of the launch's
//     size, refilled with 0xFF bytes (NaN as floats) before each block, so that a kernel reading
//     what it did not write shows it;
//   - warp shuffles (`__shfl_sync`, `_up`, `_down`, `_xor`), votes (`__all_sync`, `__any_sync`,
//     `__ballot_sync`) and `__syncwarp` with the full mask of the warp's lanes, through a
//     per-warp exchange (values up to 8 bytes);
//   - atomics (`atomicAdd`, `atomicMax`, `atomicMin`, `atomicCAS`, `atomicExch`) through
//     std::atomic_ref.
// Its limits, by design:
//   - no memory model beyond the barriers: a data race that a barrier orders is fine, any other
//     is a bug the emulator may not show — run the emulated tests under ThreadSanitizer, which
//     does (a missing __syncthreads is reported as a race);
//   - no timing, no occupancy, no warp-synchronous execution: code that relies on lanes running
//     in lock-step without __syncwarp or a *_sync intrinsic is wrong on the GPU too;
//   - partial-mask warp intrinsics and shuffles after a lane has exited are refused with an
//     rg::Error (they are undefined on the GPU);
//   - launches are serialised process-wide (static __shared__ storage is shared), and slow:
//     keep emulated problems small (thousands of elements, a few blocks).
#if defined(__CUDACC__)
#error "core/cuda/emulator.h is for the host compiler; nvcc builds kernels natively"
#endif

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>

#include "core/error.h"

// --- The CUDA vocabulary, for the host compiler --------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __shared__ static

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
using uint3 = dim3;
using cudaStream_t = struct CUstream_st*;

extern thread_local dim3 threadIdx;
extern thread_local dim3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;
inline constexpr int warpSize = 32;

namespace rg::emu {

// The launch: calls `body` as every thread of every block (see above). Throws rg::Error for a
// bad configuration (as cudaErrorInvalidConfiguration would) and rethrows the first exception a
// thread raised.
void launch(dim3 grid, dim3 block, std::size_t dynamic_shared_bytes,
            const std::function<void()>& body);

// The calling thread's block, for the intrinsics below.
void sync_block();
void* dynamic_shared();
// Exchanges `bits` with the lane `source` of the calling thread's warp (after all lanes in
// `mask` have arrived); returns the source lane's bits. `mask` must name every lane of the warp.
uint64_t warp_exchange(unsigned mask, uint64_t bits, int source_lane);
// Every lane's flag as a bit of the result.
unsigned warp_ballot(unsigned mask, bool flag);
void sync_warp(unsigned mask);
int lane_id();

template <class T>
uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>,
                "emulated shuffles move values of at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}
template <class T>
T from_bits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

}  // namespace rg::emu

inline void __syncthreads() {
  ::rg::emu::sync_block();
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::rg::emu::sync_warp(mask);
}
inline void __threadfence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

// Shuffles: `width` splits the warp into segments of that many lanes, as on the GPU.
template <class T>
T __shfl_sync(unsigned mask, T v, int src, int width = warpSize) {
  const int lane = ::rg::emu::lane_id();
  const int source = (lane / width) * width + ((src % width) + width) % width;
  return ::rg::emu::from_bits<T>(::rg::emu::warp_exchange(mask, ::rg::emu::to_bits(v), source));
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  const int lane = ::rg::emu::lane_id();
  const int in_segment = lane % width + static_cast<int>(delta);
  const int source = in_segment < width ? lane + static_cast<int>(delta) : lane;
  return ::rg::emu::from_bits<T>(::rg::emu::warp_exchange(mask, ::rg::emu::to_bits(v), source));
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  const int lane = ::rg::emu::lane_id();
  const int in_segment = lane % width - static_cast<int>(delta);
  const int source = in_segment >= 0 ? lane - static_cast<int>(delta) : lane;
  return ::rg::emu::from_bits<T>(::rg::emu::warp_exchange(mask, ::rg::emu::to_bits(v), source));
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize) {
  const int lane = ::rg::emu::lane_id();
  int source = lane ^ lane_mask;
  if (source / width != lane / width) source = lane;  // outside the segment: own value
  return ::rg::emu::from_bits<T>(::rg::emu::warp_exchange(mask, ::rg::emu::to_bits(v), source));
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return ::rg::emu::warp_ballot(mask, predicate != 0);
}
inline int __all_sync(unsigned mask, int predicate) {
  return ::rg::emu::warp_ballot(mask, predicate != 0) == mask;  // mask names every lane
}
inline int __any_sync(unsigned mask, int predicate) {
  return ::rg::emu::warp_ballot(mask, predicate != 0) != 0;
}

// Atomics return the old value, as on the GPU.
template <class T>
T atomicAdd(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value);
}
template <class T>
T atomicExch(T* address, T value) {
  return std::atomic_ref<T>(*address).exchange(value);
}
template <class T>
T atomicCAS(T* address, T compare, T value) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value);
  return compare;  // holds the old value either way
}
template <class T>
T atomicMax(T* address, T value) {
  static_assert(std::is_integral_v<T>, "atomicMax takes integers, as on the GPU");
  std::atomic_ref<T> ref(*address);
  T old = ref.load();
  while (old < value && !ref.compare_exchange_weak(old, value)) {
  }
  return old;
}
template <class T>
T atomicMin(T* address, T value) {
  static_assert(std::is_integral_v<T>, "atomicMin takes integers, as on the GPU");
  std::atomic_ref<T> ref(*address);
  T old = ref.load();
  while (old > value && !ref.compare_exchange_weak(old, value)) {
  }
  return old;
}

// Dynamic shared memory: `extern __shared__ T name[]` on the GPU.
#define RG_DYNAMIC_SHARED(T, name) T* name = static_cast<T*>(::rg::emu::dynamic_shared())
