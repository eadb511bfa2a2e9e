#include "core/device_memory.h"

#include <array>
#include <atomic>
#include <cstdio>

#include "core/error.h"

namespace rg {

namespace {

constexpr int kMaxCudaDevices = 64;

struct Counters {
  std::atomic<int64_t> current{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> allocations{0};
};

// One set per logical cpu device (DataParallel reports each replica's memory) and per GPU.
Counters& counters(const Device& device) {
  static std::array<Counters, kMaxCpuDevices> cpu;
  static std::array<Counters, kMaxCudaDevices> cuda;
  const int limit = device.is_cpu() ? kMaxCpuDevices : kMaxCudaDevices;
  RG_CHECK(device.index >= 0 && device.index < limit, "invalid device ", device);
  return device.is_cpu() ? cpu[device.index] : cuda[device.index];
}

}  // namespace

void record_allocation(const Device& device, int64_t nbytes) {
  Counters& c = counters(device);
  const int64_t now = c.current.fetch_add(nbytes) + nbytes;
  int64_t peak = c.peak.load();
  while (now > peak && !c.peak.compare_exchange_weak(peak, now)) {
  }
  c.allocations.fetch_add(1);
}

void record_deallocation(const Device& device, int64_t nbytes) {
  counters(device).current.fetch_sub(nbytes);
}

MemoryStats counted_memory(const Device& device) {
  Counters& c = counters(device);
  return {c.current.load(), c.peak.load(), c.allocations.load()};
}

void reset_counted_peak(const Device& device) {
  Counters& c = counters(device);
  c.peak.store(c.current.load());
}

std::string format_bytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while ((value >= 1024 || value <= -1024) && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0)
    std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  else
    std::snprintf(text, sizeof text, "%.2f %s", value, kUnits[unit]);
  return text;
}

}  // namespace rg
