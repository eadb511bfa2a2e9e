#pragma once
// Multi-tensor apply (Apex's multi_tensor_apply, PyTorch's _foreach kernels): one launch runs an
// elementwise step over a whole list of tensors of different sizes and dtypes. The host writes a
// table into device memory:
//
//   slots  [Slot<S>] × tensors   up to kMaxOperands pointers (param, grad, state buffers), the
//                                numel, the dtype, the tensor's index in the caller's list and
//                                its per-tensor scalars S (learning rate, bias corrections, ...)
//   chunks [Chunk]   × chunks    (slot, begin, end): every tensor cut into runs of kChunk elements
//
// and each block takes chunks grid-stride (blockIdx.x, + gridDim.x, ...), its threads striding
// over the chunk's elements. A table in device memory has no size limit (kernel arguments are
// capped at 4 KiB before CUDA 12.1), so a step is one launch whatever the number of parameters.
// The table is a u8 tensor on the tensors' device (on the CPU in the emulated tests), copied
// there from pinned memory without the host waiting, and released after the launch:
// stream-ordered memory keeps it alive until the kernel has run.

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/cuda/kernel.h"
#include "core/dispatch.h"
#include "core/tensor.h"

namespace rg::multi_tensor {
inline namespace RG_KERNEL_BUILD {

inline constexpr int kMaxOperands = 5;  // AdamW with AMSGrad: p, g, m, v, max v

// Elements per chunk: a block's work between two table reads. Emulated, a small odd chunk cuts
// the tests' tensors into several chunks, with ragged ends.
#if defined(__CUDACC__)
inline constexpr int64_t kChunk = 1 << 16;
#else
inline constexpr int64_t kChunk = 77;
#endif

template <class S>
struct Slot {
  void* ptr[kMaxOperands];
  int64_t numel;
  int64_t index;  // the tensor's position in the caller's list (found-inf reports it)
  DType dtype;
  S scalars;
};

struct Chunk {
  int64_t slot, begin, end;
};

// The host side of the table: add() the tensors, then upload() once.
template <class S>
class Table {
 public:
  // operands: contiguous tensors of one shape, dtype and device; missing ones undefined.
  void add(std::initializer_list<Tensor> operands, int64_t index, const S& scalars) {
    Slot<S> slot{};
    int k = 0;
    for (const Tensor& t : operands) slot.ptr[k++] = t.defined() ? t.data_ptr() : nullptr;
    const Tensor& first = *operands.begin();
    slot.numel = first.numel();
    slot.index = index;
    slot.dtype = first.dtype();
    slot.scalars = scalars;
    const int64_t s = static_cast<int64_t>(slots_.size());
    for (int64_t b = 0; b < slot.numel; b += kChunk)
      chunks_.push_back({s, b, b + kChunk < slot.numel ? b + kChunk : slot.numel});
    slots_.push_back(slot);
  }
  int64_t chunks() const { return static_cast<int64_t>(chunks_.size()); }

  // The table in memory of `device`: slots, then chunks (both 8-byte aligned).
  Tensor upload(const Device& device) const {
    static_assert(sizeof(Slot<S>) % 8 == 0 && sizeof(Chunk) % 8 == 0);
    const std::size_t slot_bytes = slots_.size() * sizeof(Slot<S>);
    const std::size_t bytes = slot_bytes + chunks_.size() * sizeof(Chunk);
    Tensor host = empty({static_cast<int64_t>(bytes)}, {DType::u8});
    auto* raw = static_cast<unsigned char*>(host.data_ptr());
    std::memcpy(raw, slots_.data(), slot_bytes);
    std::memcpy(raw + slot_bytes, chunks_.data(), bytes - slot_bytes);
    // From pinned memory the copy is queued and the host goes on; from pageable memory it would
    // wait for the whole backward pass to finish before the step's launch.
    if (device.is_cuda()) return host.pin_memory().to(device, NonBlocking::yes);
    return host.to(device);
  }
  const Slot<S>* slots_in(const Tensor& table) const {
    return static_cast<const Slot<S>*>(table.data_ptr());
  }
  const Chunk* chunks_in(const Tensor& table) const {
    return reinterpret_cast<const Chunk*>(static_cast<const unsigned char*>(table.data_ptr()) +
                                          slots_.size() * sizeof(Slot<S>));
  }

 private:
  std::vector<Slot<S>> slots_;
  std::vector<Chunk> chunks_;
};

// Calls op.template run<T>(slot, begin, end, c) for chunk c, T the slot's element type.
template <class T, class S, class Op>
__device__ void run_typed(const Op& op, const Slot<S>& slot, const Chunk& chunk, int64_t c) {
  op.template run<T>(slot, chunk.begin, chunk.end, c);
}

// The kernel: blocks take chunks grid-stride; the dtype switch is uniform over a block.
template <class S, class Op>
__global__ void apply_kernel(const Slot<S>* slots, const Chunk* chunks, int64_t n, Op op) {
  for (int64_t c = blockIdx.x; c < n; c += gridDim.x) {
    const Chunk chunk = chunks[c];
    const Slot<S>& slot = slots[chunk.slot];
    switch (slot.dtype) {
      case DType::f32:
        run_typed<float>(op, slot, chunk, c);
        break;
      case DType::f64:
        run_typed<double>(op, slot, chunk, c);
        break;
      case DType::f16:
        run_typed<Half>(op, slot, chunk, c);
        break;
      case DType::bf16:
        run_typed<BFloat16>(op, slot, chunk, c);
        break;
      default:
        break;  // the host admits floating dtypes only
    }
  }
}

// One launch of op over the table (nothing when it is empty); the table lives on `device`.
template <class S, class Op>
void apply(const Table<S>& table, const Device& device, const Op& op, cudaStream_t stream) {
  if (table.chunks() == 0) return;
  const Tensor memory = table.upload(device);
  cuda::launch(apply_kernel<S, Op>, dim3(cuda::lane_blocks(table.chunks())),
               dim3(cuda::kBlockThreads), 0, stream, table.slots_in(memory),
               table.chunks_in(memory), table.chunks(), op);
}

}  // namespace RG_KERNEL_BUILD
}  // namespace rg::multi_tensor
