#pragma once
// Streams for code that is not CUDA code (parallel/device_threads.cpp): a host thread's own
// stream on a GPU, and a mark that orders one thread's GPU work after another's. This is what
// lets several DataParallel replicas share one GPU as if each had its own: each replica thread
// computes on a stream of its own (the GPU may overlap them), and its work is ordered after
// what the thread that handed it the work had queued. On cpu devices every call does nothing:
// CPU kernels have finished when they return.

#include <memory>

#include "core/device.h"

namespace rg {

// Makes `device` the calling thread's current GPU and a new (non-blocking) stream of it the
// thread's current stream, for the object's life. Create and destroy it on the same thread.
// Tensors allocated on the stream stay valid after it is gone (core/cuda/stream.h).
class OwnStream {
 public:
  explicit OwnStream(const Device& device);
  ~OwnStream();
  OwnStream(const OwnStream&) = delete;
  OwnStream& operator=(const OwnStream&) = delete;
  // The host waits for everything queued on the stream so far.
  void synchronize() const;

 private:
  std::shared_ptr<void> state_;  // cuda: the guards and the stream; null on the cpu
};

// A point in the work one thread queued on `device`. record() marks the work queued so far on
// the calling thread's current stream of the device; wait() makes work queued later on the
// calling thread's current stream wait for it (the host does not wait). record() on one thread,
// wait() on another, ordered by the host (a mutex, a join).
class StreamMark {
 public:
  explicit StreamMark(const Device& device);
  ~StreamMark();
  StreamMark(const StreamMark&) = delete;
  StreamMark& operator=(const StreamMark&) = delete;
  void record();
  void wait() const;

 private:
  Device device_;
  std::shared_ptr<void> event_;  // cuda: an rg::cuda::Event; null on the cpu
};

}  // namespace rg
