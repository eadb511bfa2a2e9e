#pragma once
// DeviceThreads: one long-lived thread per device — DataParallel's "one thread per device".
// run(count, fn) calls fn(i) on device i's thread for every i < count, waits for all of them
// and hands back each one's error. The threads live as long as the DataParallel, so what a
// thread keeps between calls (the scratch buffers of the CPU kernels) is reused step after step.
//
// On a logical cpu device each thread computes with its own ThreadShare (core/thread_pool.h): a
// private pool of `threads_per_device` threads, so that N devices split the cores instead of
// all racing for the process-wide pool — and the device as its current cpu device
// (core/device.h), so that tensors made there without naming a device are the device's.
//
// On a GPU each thread has the GPU as its current device and a stream of its own
// (core/device_streams.h): threads that share one GPU — replicas on cuda:0, cuda:0 — then run
// as if each had its own. The order between them and the caller is kept by two rules, which
// make every cross-stream use of memory safe without record_stream:
//   - before fn, the thread's stream waits for what the caller had queued on its current
//     stream of the device when it called run() (a StreamMark): the inputs it hands over;
//   - after fn, the thread waits (host) for its stream to finish, so run() returns only when
//     the GPU work of every thread is done — and busy_seconds() measures it. Memory a thread's
//     stream allocated and the caller later reads is then freed, at the earliest, while that
//     stream is idle, and the stream reuses it only in a later run, after waiting for the
//     caller's work of that time.
// Several devices may be the same: they get a thread each.

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/device.h"
#include "core/device_streams.h"
#include "core/thread_pool.h"

namespace rg::parallel {

class DeviceThreads {
 public:
  DeviceThreads(std::vector<Device> devices, int threads_per_device);
  ~DeviceThreads();
  DeviceThreads(const DeviceThreads&) = delete;
  DeviceThreads& operator=(const DeviceThreads&) = delete;

  // Runs fn(i) on thread i for i < count (<= the number of devices); returns when all have
  // finished, with errors[i] set for each i whose fn threw. One run at a time.
  std::vector<std::exception_ptr> run(int count, const std::function<void(int)>& fn);
  // Seconds each thread spent in fn during the last run (0 for the threads left out).
  const std::vector<double>& busy_seconds() const { return busy_seconds_; }
  int size() const { return static_cast<int>(devices_.size()); }
  int threads_per_device() const { return shares_.front()->threads(); }

 private:
  void work(int index);

  std::vector<Device> devices_;
  std::vector<std::unique_ptr<ThreadShare>> shares_;
  std::vector<std::unique_ptr<StreamMark>> handed_over_;  // per thread: the caller's work in run()
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(int)>* job_ = nullptr;
  int count_ = 0;
  int remaining_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  std::vector<std::exception_ptr> errors_;
  std::vector<double> busy_seconds_;
  std::mutex run_mutex_;  // one run at a time
};

}  // namespace rg::parallel
