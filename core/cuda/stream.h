#pragma once
// Streams, events and the device guard of the CUDA backend. Included only by core/cuda/*, .cu
// files and CUDA-only translation units (it pulls in <cuda_runtime.h>).
//
// Every host thread has, for every device, a *current stream*: kernels, copies and
// allocations go there. It starts as the device's legacy default stream (cudaStreamLegacy) —
// one stream per device shared by all host threads, which synchronises with every other
// blocking stream. Not cudaStreamPerThread, because that handle means a different stream in
// each thread: memory is freed on the stream it was allocated on (core/cuda/cuda_allocator.cpp),
// and a tensor allocated in a DataLoader or DataParallel thread is often freed in another;
// freed on *that* thread's per-thread stream it could be handed out again while the first
// thread's kernels still use it. Code that wants concurrency creates a Stream and makes it
// current with a StreamGuard (PyTorch does the same).
//
//   rg::cuda::DeviceGuard device(1);                  // cudaSetDevice(1) until scope exit
//   rg::cuda::Stream side(1);                         // a new non-blocking stream on cuda:1
//   rg::cuda::Event ready(1);
//   ready.record(rg::cuda::current_stream(1));        // after the work queued so far
//   ready.block(side.get());                          // side waits for it, the host does not
//   { rg::cuda::StreamGuard use(1, side.get()); ... } // work in here runs on `side`

#include <cuda_runtime.h>

namespace rg {
class Tensor;
}

namespace rg::cuda {

// The current stream of `device` in this host thread (cudaStreamLegacy until set).
// cudaStreamLegacy names the legacy stream of whichever device is current where it is used:
// pass current_stream(d) to CUDA calls under a DeviceGuard for d.
cudaStream_t current_stream(int device);
// Makes `stream` (a stream of `device`) current for `device` in this host thread. Refuses
// cudaStreamPerThread, for the reason above.
void set_current_stream(int device, cudaStream_t stream);

// Makes a stream current for one device until the end of the scope, then restores the
// previous one.
class StreamGuard {
 public:
  StreamGuard(int device, cudaStream_t stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  int device_;
  cudaStream_t previous_;
};

// Makes `device` the calling thread's current CUDA device until the end of the scope, then
// restores the previous one. Throws the clear "no usable GPU" rg::Error where there is none.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;  // -1: the device was already current, nothing to restore
};

// An owned CUDA stream. Non-blocking: it never waits implicitly for the legacy default
// stream, so order it against other streams with an Event.
class Stream {
 public:
  explicit Stream(int device);
  // Waits for nothing: work already queued still runs (cudaStreamDestroy). Tensors allocated
  // on it stay valid and are freed on the legacy stream after that work.
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }
  void synchronize() const;  // the host waits for everything queued so far
  bool query() const;        // true when everything queued so far has finished

 private:
  int device_ = -1;
  cudaStream_t stream_ = nullptr;
};

enum class EventTiming : unsigned char { disabled, enabled };

// An owned CUDA event. Timing is off by default: events that only order streams are cheaper
// without it (cudaEventDisableTiming).
class Event {
 public:
  explicit Event(int device, EventTiming timing = EventTiming::disabled);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }
  int device() const { return device_; }
  // Captures the work queued on `stream` (a stream of this event's device; cudaStreamLegacy:
  // that device's legacy stream) so far.
  void record(cudaStream_t stream);
  // Makes future work on `stream` (of any device; cudaStreamLegacy: the current device's) wait
  // for the recorded work; the host does not wait.
  void block(cudaStream_t stream) const;
  void synchronize() const;  // the host waits for the recorded work
  bool query() const;        // true when the recorded work has finished
  // Milliseconds from this event to `end`; both recorded, finished and with timing enabled.
  float elapsed_ms(const Event& end) const;

 private:
  int device_ = -1;
  cudaEvent_t event_ = nullptr;
  EventTiming timing_ = EventTiming::disabled;
};

// The host waits for all work on `device` (cudaDeviceSynchronize).
void synchronize(int device);

// Tells the allocator that work queued on `stream` uses `tensor`'s memory (a GPU tensor
// allocated on another stream): when the memory is freed, the free waits for the work queued on
// `stream` by then (PyTorch's Tensor.record_stream). Without it, memory used on a second stream
// may be handed out again while that stream still reads it.
void record_stream(const Tensor& tensor, cudaStream_t stream);

}  // namespace rg::cuda
