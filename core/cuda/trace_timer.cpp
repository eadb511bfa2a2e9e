// The timeline's device timer on GPUs (core/trace.h): a mark is a timing CUDA event recorded on
// the calling thread's current stream — the host does not wait; stop() reads the events after
// the traced steps. Never run on a GPU yet (scripts/gpu_quick_check.sh trace covers it).
#include <cstdio>

#include "core/cuda/stream.h"
#include "core/trace.h"

namespace rg::trace {
namespace {

class CudaTimer final : public DeviceTimer {
 public:
  Mark mark(const Device& device) override {
    cuda::DeviceGuard guard(device.index);
    auto event = std::make_shared<cuda::Event>(device.index, cuda::EventTiming::enabled);
    cudaStream_t stream = cuda::current_stream(device.index);
    event->record(stream);
    char name[96];
    std::snprintf(name, sizeof name, "%s stream %p", device.str().c_str(),
                  static_cast<void*>(stream));
    return {event, name};
  }

  double elapsed_ms(const Mark& from, const Mark& to) override {
    const auto& a = *static_cast<const cuda::Event*>(from.handle.get());
    const auto& b = *static_cast<const cuda::Event*>(to.handle.get());
    a.synchronize();
    b.synchronize();
    return a.elapsed_ms(b);
  }
};

}  // namespace

DeviceTimer& cuda_device_timer() {
  static CudaTimer timer;
  return timer;
}

}  // namespace rg::trace
