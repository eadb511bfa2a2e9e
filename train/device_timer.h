#pragma once
// How long a device took for the work queued on it between two points of the host's program:
// on a GPU, CUDA events recorded on the calling thread's current stream (the device's own time,
// as airbench94 and PyTorch's benchmarks time an epoch); on the CPU, whose kernels finish before
// they return, the wall clock. Starting and stopping add no synchronisation: seconds() waits for
// the stop event, so read it where the host waits for the device anyway (the end of an epoch).

#include <memory>

#include "core/device.h"

namespace rg::train {

class DeviceTimer {
 public:
  explicit DeviceTimer(const Device& device);  // starts at once
  ~DeviceTimer();
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;

  void stop();
  // Seconds from start to stop (stop() first); on a GPU the host waits for the stop event.
  double seconds() const;

  // One backend's clock (device_timer.cpp, device_timer_cuda.cpp).
  struct Clock {
    virtual ~Clock() = default;
    virtual void stop() = 0;
    virtual double seconds() const = 0;
  };

 private:
  std::unique_ptr<Clock> clock_;
  bool stopped_ = false;
};

}  // namespace rg::train
