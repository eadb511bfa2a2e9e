#include "core/device_streams.h"

#include "core/config.h"

namespace rg {

// core/cuda/thread_stream.cpp, in CUDA builds; called only there (kWithCuda).
std::shared_ptr<void> cuda_runtime_own_stream(int device);
void cuda_runtime_own_stream_synchronize(void* state);
std::shared_ptr<void> cuda_runtime_event(int device);
void cuda_runtime_event_record(void* event, int device);
void cuda_runtime_event_wait(void* event, int device);

OwnStream::OwnStream(const Device& device) {
  if constexpr (kWithCuda)
    if (device.is_cuda()) state_ = cuda_runtime_own_stream(device.index);
}

OwnStream::~OwnStream() = default;

void OwnStream::synchronize() const {
  if constexpr (kWithCuda)
    if (state_) cuda_runtime_own_stream_synchronize(state_.get());
}

StreamMark::StreamMark(const Device& device) : device_(device) {
  if constexpr (kWithCuda)
    if (device.is_cuda()) event_ = cuda_runtime_event(device.index);
}

StreamMark::~StreamMark() = default;

void StreamMark::record() {
  if constexpr (kWithCuda)
    if (event_) cuda_runtime_event_record(event_.get(), device_.index);
}

void StreamMark::wait() const {
  if constexpr (kWithCuda)
    if (event_) cuda_runtime_event_wait(event_.get(), device_.index);
}

}  // namespace rg
