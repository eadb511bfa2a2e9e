// Current streams, the device guard, and RAII streams and events (see stream.h).
#include "core/cuda/stream.h"

#include <array>
#include <cstdio>
#include <utility>

#include "core/cuda/cuda_allocator.h"
#include "core/cuda/cuda_check.h"
#include "core/device.h"

namespace rg {

void detail::cuda_warn(const char* file, int line, const char* call, cudaError_t status) noexcept {
  std::fprintf(stderr, "ringgrad: warning: %s:%d: %s failed: %s (%s)\n", file, line, call,
               cudaGetErrorName(status), cudaGetErrorString(status));
  cudaGetLastError();  // clear it, so that the next checked call does not report it again
}

namespace cuda {
namespace {

constexpr int kMaxDevices = 64;

void check_index(int device, const char* what) {
  RG_CHECK(device >= 0 && device < kMaxDevices, what, ": invalid CUDA device index ", device);
}

// nullptr stands for cudaStreamLegacy, so that the array starts out right in every thread.
std::array<cudaStream_t, kMaxDevices>& current_streams() {
  thread_local std::array<cudaStream_t, kMaxDevices> streams{};
  return streams;
}

// Blocks allocated on a stream are freed on it (core/cuda/cuda_allocator.cpp); those still
// alive when the stream goes away are handed to the device's legacy stream, made to wait for
// everything queued on the dying one, so that their frees still come after their last use.
void destroy_stream(int device, cudaStream_t stream) noexcept {
  int previous = device;
  RG_CUDA_WARN(cudaGetDevice(&previous));
  if (previous != device) RG_CUDA_WARN(cudaSetDevice(device));
  cudaEvent_t done = nullptr;
  RG_CUDA_WARN(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  if (done) {
    RG_CUDA_WARN(cudaEventRecord(done, stream));
    RG_CUDA_WARN(cudaStreamWaitEvent(cudaStreamLegacy, done, 0));
    RG_CUDA_WARN(cudaEventDestroy(done));
  }
  move_blocks_to_stream(device, stream, cudaStreamLegacy);
  // Left current in this thread (a guard outliving its stream), it would dangle.
  cudaStream_t& current = current_streams()[static_cast<std::size_t>(device)];
  if (current == stream) current = cudaStreamLegacy;
  RG_CUDA_WARN(cudaStreamDestroy(stream));
  if (previous != device) RG_CUDA_WARN(cudaSetDevice(previous));
}

}  // namespace

cudaStream_t current_stream(int device) {
  check_index(device, "current_stream");
  cudaStream_t s = current_streams()[static_cast<std::size_t>(device)];
  return s ? s : cudaStreamLegacy;
}

void set_current_stream(int device, cudaStream_t stream) {
  check_index(device, "set_current_stream");
  RG_CHECK(stream != cudaStreamPerThread,
           "set_current_stream: cudaStreamPerThread names a different stream in every host "
           "thread, so memory allocated on it could be freed on another thread's stream; create "
           "an rg::cuda::Stream instead");
  // 0 is the legacy default stream too (unless nvcc's --default-stream per-thread); store the
  // explicit handle so the meaning does not depend on compiler flags.
  current_streams()[static_cast<std::size_t>(device)] = stream ? stream : cudaStreamLegacy;
}

StreamGuard::StreamGuard(int device, cudaStream_t stream)
    : device_(device), previous_(current_stream(device)) {
  set_current_stream(device, stream);
}

StreamGuard::~StreamGuard() {
  current_streams()[static_cast<std::size_t>(device_)] = previous_;
}

DeviceGuard::DeviceGuard(int device) {
  check_device_available(Device::cuda(device));  // the clear message where there is no GPU
  int previous = 0;
  RG_CUDA_CHECK(cudaGetDevice(&previous));
  if (previous == device) return;
  RG_CUDA_CHECK(cudaSetDevice(device));
  previous_ = previous;
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) RG_CUDA_WARN(cudaSetDevice(previous_));
}

Stream::Stream(int device) : device_(device) {
  DeviceGuard guard(device);
  RG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  if (stream_) destroy_stream(device_, stream_);
}

Stream::Stream(Stream&& other) noexcept
    : device_(other.device_), stream_(std::exchange(other.stream_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_) destroy_stream(device_, stream_);
    device_ = other.device_;
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void Stream::synchronize() const {
  RG_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

bool Stream::query() const {
  const cudaError_t status = cudaStreamQuery(stream_);
  if (status == cudaErrorNotReady) {
    cudaGetLastError();  // "not ready" is an answer, not an error; keep it out of later checks
    return false;
  }
  RG_CUDA_CHECK(status);
  return true;
}

Event::Event(int device, EventTiming timing) : device_(device), timing_(timing) {
  DeviceGuard guard(device);
  const unsigned flags = timing == EventTiming::enabled ? cudaEventDefault : cudaEventDisableTiming;
  RG_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags));
}

Event::~Event() {
  if (event_) RG_CUDA_WARN(cudaEventDestroy(event_));
}

Event::Event(Event&& other) noexcept
    : device_(other.device_),
      event_(std::exchange(other.event_, nullptr)),
      timing_(other.timing_) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_) RG_CUDA_WARN(cudaEventDestroy(event_));
    device_ = other.device_;
    event_ = std::exchange(other.event_, nullptr);
    timing_ = other.timing_;
  }
  return *this;
}

void Event::record(cudaStream_t stream) {
  // cudaStreamLegacy means the legacy stream of the *current* device: make it this event's.
  DeviceGuard guard(device_);
  RG_CUDA_CHECK(cudaEventRecord(event_, stream));
}

void Event::block(cudaStream_t stream) const {
  // No device switch: the event may belong to another device than the stream, and
  // cudaStreamLegacy must keep meaning the caller's current device.
  RG_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
}

void Event::synchronize() const {
  RG_CUDA_CHECK(cudaEventSynchronize(event_));
}

bool Event::query() const {
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  RG_CUDA_CHECK(status);
  return true;
}

float Event::elapsed_ms(const Event& end) const {
  RG_CHECK(timing_ == EventTiming::enabled && end.timing_ == EventTiming::enabled,
           "Event::elapsed_ms: both events need EventTiming::enabled");
  float ms = 0;
  RG_CUDA_CHECK(cudaEventElapsedTime(&ms, event_, end.event_));
  return ms;
}

void synchronize(int device) {
  DeviceGuard guard(device);
  RG_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace cuda
}  // namespace rg
