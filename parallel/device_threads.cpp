#include "parallel/device_threads.h"

#include <chrono>
#include <optional>
#include <utility>

#include "core/error.h"
#include "core/trace.h"

namespace rg::parallel {

DeviceThreads::DeviceThreads(std::vector<Device> devices, int threads_per_device)
    : devices_(std::move(devices)) {
  RG_CHECK(!devices_.empty(), "DeviceThreads: no devices");
  RG_CHECK(threads_per_device >= 1, "DeviceThreads: threads per device must be >= 1, got ",
           threads_per_device);
  const std::size_t n = devices_.size();
  errors_.resize(n);
  busy_seconds_.assign(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    shares_.push_back(std::make_unique<ThreadShare>(threads_per_device));
    handed_over_.push_back(std::make_unique<StreamMark>(devices_[i]));
  }
  for (std::size_t i = 0; i < n; ++i)
    threads_.emplace_back([this, i] { work(static_cast<int>(i)); });
}

DeviceThreads::~DeviceThreads() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::vector<std::exception_ptr> DeviceThreads::run(int count, const std::function<void(int)>& fn) {
  RG_CHECK(count >= 1 && count <= size(), "DeviceThreads::run: ", count, " of ", size(),
           " devices");
  std::lock_guard one_run(run_mutex_);
  // What the caller queued so far on each thread's device, which fn may read.
  for (int i = 0; i < count; ++i) handed_over_[static_cast<std::size_t>(i)]->record();
  std::unique_lock lock(mutex_);
  job_ = &fn;
  count_ = count;
  remaining_ = size();  // every thread reports back, also those with nothing to do
  std::fill(errors_.begin(), errors_.end(), nullptr);
  std::fill(busy_seconds_.begin(), busy_seconds_.end(), 0.0);
  ++generation_;
  start_.notify_all();
  done_.wait(lock, [this] { return remaining_ == 0; });
  job_ = nullptr;
  return errors_;
}

void DeviceThreads::work(int index) {
  const Device device = devices_[static_cast<std::size_t>(index)];
  trace::name_this_thread("replica " + std::to_string(index) + " (" + device.str() + ")");
  ScopedThreadShare share(*shares_[static_cast<std::size_t>(index)]);
  // What this thread allocates without naming a device belongs to its device.
  std::optional<CurrentCpuDevice> current;
  if (device.is_cpu()) current.emplace(device);
  // A GPU: its own stream, current for this thread's life (nothing on the cpu). Made here, not
  // in the constructor: a stream is current per thread. An error here leaves the thread
  // reporting it at every run.
  std::unique_ptr<OwnStream> stream;
  std::exception_ptr start_error;
  try {
    stream = std::make_unique<OwnStream>(device);
  } catch (...) {
    start_error = std::current_exception();
  }
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    int count;
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
      count = count_;
    }
    std::exception_ptr error;
    double seconds = 0;
    if (index < count) {
      const auto started = std::chrono::steady_clock::now();
      try {
        if (start_error) std::rethrow_exception(start_error);
        handed_over_[static_cast<std::size_t>(index)]->wait();
        (*job)(index);
      } catch (...) {
        error = std::current_exception();
      }
      // Also after an error: the caller may free what the stream still reads.
      try {
        if (stream) stream->synchronize();
      } catch (...) {
        if (!error) error = std::current_exception();
      }
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    }
    std::lock_guard lock(mutex_);
    // Moved, not copied: this thread then never releases the exception after the mutex, so its
    // last release happens on the caller's side of the lock (TSan cannot see libstdc++'s
    // atomic refcount of exception_ptr, and reported the message's release here as a race).
    errors_[static_cast<std::size_t>(index)] = std::move(error);
    busy_seconds_[static_cast<std::size_t>(index)] = seconds;
    if (--remaining_ == 0) done_.notify_one();
  }
}

}  // namespace rg::parallel
