// DeviceTimer's clock on a GPU: two timed CUDA events on the current stream.
#include "core/cuda/stream.h"
#include "core/dispatch.h"
#include "train/device_timer.h"

namespace rg::train {

namespace {
class EventClock final : public DeviceTimer::Clock {
 public:
  explicit EventClock(int device)
      : device_(device),
        start_(device, cuda::EventTiming::enabled),
        end_(device, cuda::EventTiming::enabled) {
    cuda::DeviceGuard guard(device_);
    start_.record(cuda::current_stream(device_));
  }
  void stop() override {
    cuda::DeviceGuard guard(device_);
    end_.record(cuda::current_stream(device_));
  }
  double seconds() const override {
    end_.synchronize();
    return start_.elapsed_ms(end_) / 1000.0;
  }

 private:
  int device_;
  cuda::Event start_, end_;
};
}  // namespace

std::unique_ptr<DeviceTimer::Clock> make_clock(OnCuda, const Device& device) {
  return std::make_unique<EventClock>(device.index);
}

}  // namespace rg::train
