// The CUDA side of core/device_streams.h. Compiled only into CUDA builds.
#include <memory>

#include "core/cuda/stream.h"

namespace rg {

namespace {
// Built in this order, destroyed in the reverse: the thread's current device, its own stream
// on it, that stream current for the device.
struct ThreadStream {
  explicit ThreadStream(int device)
      : guard(device), stream(device), current(device, stream.get()) {}
  cuda::DeviceGuard guard;
  cuda::Stream stream;
  cuda::StreamGuard current;
};
}  // namespace

std::shared_ptr<void> cuda_runtime_own_stream(int device) {
  return std::make_shared<ThreadStream>(device);
}

void cuda_runtime_own_stream_synchronize(void* state) {
  static_cast<ThreadStream*>(state)->stream.synchronize();
}

std::shared_ptr<void> cuda_runtime_event(int device) {
  return std::make_shared<cuda::Event>(device);
}

void cuda_runtime_event_record(void* event, int device) {
  static_cast<cuda::Event*>(event)->record(cuda::current_stream(device));
}

void cuda_runtime_event_wait(void* event, int device) {
  // cudaStreamLegacy in block() means the current device's legacy stream: make it `device`.
  cuda::DeviceGuard guard(device);
  static_cast<cuda::Event*>(event)->block(cuda::current_stream(device));
}

}  // namespace rg
