#include "core/graph_capture.h"

#include <array>
#include <atomic>

#include "core/error.h"

namespace rg {
namespace {

constexpr int kMaxDevices = 64;

std::array<std::atomic<bool>, kMaxDevices>& underway() {
  static std::array<std::atomic<bool>, kMaxDevices> flags{};
  return flags;
}

}  // namespace

bool graph_capture_underway(const Device& device) {
  return device.is_cuda() && device.index >= 0 && device.index < kMaxDevices &&
         underway()[static_cast<std::size_t>(device.index)].load(std::memory_order_acquire);
}

void refuse_in_graph_capture(const Device& device, std::string_view what, std::string_view why) {
  RG_CHECK(!graph_capture_underway(device), what, " on ", device,
           " inside a CUDA graph capture (--cuda-graphs): ", why);
}

void detail::set_graph_capture_underway(int index, bool underway_now) {
  RG_CHECK(index >= 0 && index < kMaxDevices, "graph capture: invalid CUDA device index ", index);
  underway()[static_cast<std::size_t>(index)].store(underway_now, std::memory_order_release);
}

}  // namespace rg
