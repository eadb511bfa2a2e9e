// Copies between host and device memory, and fill — the CUDA side of core/copy.cpp. All of it
// runs on the current stream of the device involved (core/cuda/stream.h), so it is ordered
// after the kernels queued there, whichever stream the caller made current.
#include "core/allocator.h"
#include "core/cuda/copy_kernels.cuh"
#include "core/cuda/cuda_allocator.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/stream.h"
#include "core/dispatch.h"
#include "core/launch_counts.h"
#include "core/tensor.h"

namespace rg {
namespace {

// A failed copy names both ends, e.g. "copy cuda:0 -> cuda:1 of 4.00 MiB: cudaMemcpyAsync(...)
// failed: cudaErrorInvalidValue (...)".
void check_copy(cudaError_t status, const char* call, const Device& src, const Device& dst,
                std::size_t nbytes) {
  if (status == cudaSuccess) [[likely]]
    return;
  cudaGetLastError();
  fail("copy ", src, " -> ", dst, " of ", format_bytes(static_cast<int64_t>(nbytes)), ": ", call,
       " failed: ", cudaGetErrorName(status), " (", cudaGetErrorString(status), ")");
}

}  // namespace

// On one GPU the copy is queued on its current stream like a kernel: the work after it there
// sees the data, and the host goes on (a train step copies on the GPU every BatchNorm layer —
// its batch count — and a wait at each left the GPU idle while the host caught up). Between the
// host and a GPU, or two GPUs, it is synchronous: the host waits, so the caller may read or free
// either side afterwards.
void cuda_copy_bytes(void* dst, const Device& dst_device, const void* src, const Device& src_device,
                     std::size_t nbytes) {
  const int index = dst_device.is_cuda() ? dst_device.index : src_device.index;
  cuda::DeviceGuard guard(index);
  const cudaStream_t stream = cuda::current_stream(index);
  count_launch(Launch::copy);
  if (src_device == dst_device) {
    check_copy(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, stream),
               "cudaMemcpyAsync", src_device, dst_device, nbytes);
    return;
  }
  if (src_device.is_cuda() && dst_device.is_cuda() && src_device.index != dst_device.index) {
    // Between two GPUs: after the work queued on the source device too.
    cuda::Event source_ready(src_device.index);
    source_ready.record(cuda::current_stream(src_device.index));
    source_ready.block(stream);
  }
  check_copy(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, stream), "cudaMemcpyAsync",
             src_device, dst_device, nbytes);
  check_copy(cudaStreamSynchronize(stream), "cudaStreamSynchronize", src_device, dst_device,
             nbytes);
}

// Host (pinned) -> device, without waiting: the copy is queued on the device's current stream,
// so kernels queued after it there see the data. The pinned source block is kept from reuse
// until the copy has run.
void cuda_copy_to_device_async(void* dst, const Device& dst_device, const void* pinned_src,
                               std::size_t nbytes) {
  cuda::DeviceGuard guard(dst_device.index);
  const cudaStream_t stream = cuda::current_stream(dst_device.index);
  count_launch(Launch::copy);
  check_copy(cudaMemcpyAsync(dst, pinned_src, nbytes, cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync", Device::cpu(), dst_device, nbytes);
  cuda::record_pinned_use(pinned_src, stream);
}

void cuda_fill(void* dst, const Device& device, DType dtype, int64_t n, double value) {
  cuda::DeviceGuard guard(device.index);
  launch_fill(dst, dtype, n, value, cuda::current_stream(device.index));
}

void cuda_copy_on_device(const Tensor& dst, const Tensor& src) {
  cuda::DeviceGuard guard(dst.device().index);
  launch_copy(dst, src, cuda::current_stream(dst.device().index));
}

}  // namespace rg
