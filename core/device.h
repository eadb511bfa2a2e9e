#pragma once
// Device: where a tensor's storage lives, "cpu", "cpu:N" or "cuda:N".
//
// cpu:0..N-1 are *logical* CPU devices: all of them are host memory and run the CPU kernels,
// but a tensor on cpu:1 and one on cpu:0 are a device mismatch exactly as two GPUs would be,
// and each has its own memory statistics. DataParallel runs one replica per logical device (on
// its own thread, with its own share of the cores), so it can be run and taught without a GPU.
// "cpu" is cpu:0.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace rg {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;  // the GPU ordinal for cuda; the logical device for cpu (0 for plain "cpu")

  static Device cpu(int index = 0) { return {DeviceType::cpu, index}; }
  static Device cuda(int index = 0) { return {DeviceType::cuda, index}; }
  // Parses "cpu" (= cpu:0), "cpu:N", "cuda" (= cuda:0) or "cuda:N"; throws rg::Error naming the
  // text otherwise.
  static Device parse(std::string_view text);

  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  std::string str() const;
  friend bool operator==(const Device&, const Device&) = default;
};

std::ostream& operator<<(std::ostream& out, const Device& device);

// The device of tensors created on this thread without naming one (TensorOptions' default):
// cpu:0, unless a CurrentCpuDevice guard chose another logical cpu device. DataParallel's device
// threads do — as CUDA code sets the current GPU of each thread — so that what a kernel or a
// backward node allocates without naming a device (BatchNorm's per-channel statistics, a
// staging buffer) lands on the replica's device, not on cpu:0.
Device current_cpu_device();
class CurrentCpuDevice {
 public:
  explicit CurrentCpuDevice(Device device);  // a cpu device
  ~CurrentCpuDevice();
  CurrentCpuDevice(const CurrentCpuDevice&) = delete;
  CurrentCpuDevice& operator=(const CurrentCpuDevice&) = delete;

 private:
  Device previous_;
};

// Number of usable GPUs: 0 in a CPU-only build, and 0 (not an error) where the CUDA runtime
// reports no device or no driver, as on the build machines.
int cuda_device_count();

// Logical CPU devices are numbered 0..kMaxCpuDevices-1 (a bound for the per-device statistics).
inline constexpr int kMaxCpuDevices = 64;

// Throws a clear rg::Error unless `device` can hold tensors in this build on this machine,
// e.g. "cuda:0 requested but this machine has no usable GPU"; cpu:N needs N < kMaxCpuDevices.
void check_device_available(const Device& device);

// Returns when `device` has finished the work queued on it so far (a no-op on the cpu, whose
// kernels finish before they return): what a benchmark waits for before reading the clock.
void synchronize(const Device& device);

}  // namespace rg
