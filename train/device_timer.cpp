#include "train/device_timer.h"

#include <chrono>

#include "core/dispatch.h"

namespace rg::train {

// The CUDA clock, in device_timer_cuda.cpp (CUDA builds only: dispatch_device instantiates the
// call only there).
std::unique_ptr<DeviceTimer::Clock> make_clock(OnCuda, const Device& device);

namespace {
class WallClock final : public DeviceTimer::Clock {
 public:
  void stop() override { end_ = std::chrono::steady_clock::now(); }
  double seconds() const override { return std::chrono::duration<double>(end_ - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), end_ = start_;
};

std::unique_ptr<DeviceTimer::Clock> make_clock(OnCpu, const Device&) {
  return std::make_unique<WallClock>();
}
}  // namespace

DeviceTimer::DeviceTimer(const Device& device)
    : clock_(dispatch_device<Kernels::cpu_and_cuda>(
          "DeviceTimer", device, [&](auto on) { return make_clock(on, device); })) {}

DeviceTimer::~DeviceTimer() = default;

void DeviceTimer::stop() {
  clock_->stop();
  stopped_ = true;
}

double DeviceTimer::seconds() const {
  RG_CHECK(stopped_, "DeviceTimer: seconds() before stop()");
  return clock_->seconds();
}

}  // namespace rg::train
