#pragma once
// Device: where a tensor's storage lives, "cpu" or "cuda:N".

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace rg {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;  // the GPU ordinal for cuda; always 0 for cpu

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::cuda, index}; }
  // Parses "cpu", "cuda" (= cuda:0) or "cuda:N"; throws rg::Error naming the text otherwise.
  static Device parse(std::string_view text);

  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  std::string str() const;
  friend bool operator==(const Device&, const Device&) = default;
};

std::ostream& operator<<(std::ostream& out, const Device& device);

// Number of usable GPUs: 0 in a CPU-only build, and 0 (not an error) where the CUDA runtime
// reports no device or no driver, as on the build machines.
int cuda_device_count();

// Throws a clear rg::Error unless `device` can hold tensors in this build on this machine,
// e.g. "cuda:0 requested but this machine has no usable GPU".
void check_device_available(const Device& device);

}  // namespace rg
