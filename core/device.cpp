#include "core/device.h"

#include <charconv>
#include <ostream>

#include "core/config.h"
#include "core/deferred_checks.h"
#include "core/dispatch.h"
#include "core/error.h"

namespace rg {

// Defined in core/cuda/cuda_device.cpp, compiled only into CUDA builds.
int cuda_runtime_device_count();
void cuda_runtime_synchronize(int device);

namespace {
// The N of "<prefix>N", or -1 when text is not that with N a non-negative decimal integer.
int parse_index(std::string_view text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return -1;
  std::string_view digits = text.substr(prefix.size());
  int index = -1;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) return -1;
  return index;
}
}  // namespace

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (const int index = parse_index(text, "cuda:"); index >= 0) return cuda(index);
  if (const int index = parse_index(text, "cpu:"); index >= 0) {
    RG_CHECK(index < kMaxCpuDevices, "invalid device '", text,
             "': logical cpu devices are cpu:0..cpu:", kMaxCpuDevices - 1);
    return cpu(index);
  }
  fail("invalid device '", text, "' (expected cpu, cpu:N, cuda or cuda:N)");
}

// cpu:0 prints as "cpu", so that the messages of programs that never name a logical device
// stay as they were.
std::string Device::str() const {
  if (is_cpu()) return index == 0 ? std::string("cpu") : "cpu:" + std::to_string(index);
  return "cuda:" + std::to_string(index);
}

std::ostream& operator<<(std::ostream& out, const Device& device) {
  return out << device.str();
}

namespace {
thread_local Device tls_current_cpu = Device::cpu();
}  // namespace

Device current_cpu_device() {
  return tls_current_cpu;
}

CurrentCpuDevice::CurrentCpuDevice(Device device) : previous_(tls_current_cpu) {
  RG_CHECK(device.is_cpu(), "CurrentCpuDevice: ", device, " is not a cpu device");
  check_device_available(device);
  tls_current_cpu = device;
}

CurrentCpuDevice::~CurrentCpuDevice() {
  tls_current_cpu = previous_;
}

int cuda_device_count() {
  if constexpr (kWithCuda) {
    static const int count = cuda_runtime_device_count();
    return count;
  } else {
    return 0;
  }
}

void check_device_available(const Device& device) {
  if (device.is_cpu()) {
    RG_CHECK(device.index >= 0 && device.index < kMaxCpuDevices,
             "invalid device cpu:", device.index,
             ": logical cpu devices are cpu:0..cpu:", kMaxCpuDevices - 1);
    return;
  }
  if constexpr (!kWithCuda) {
    fail(device,
         " requested but this build of ringgrad has no CUDA backend (configure with "
         "-DRG_CUDA=ON and the CUDA toolkit)");
  }
  const int count = cuda_device_count();
  RG_CHECK(count > 0, device,
           " requested but this machine has no usable GPU (the CUDA runtime "
           "reports no device or no driver); use --device cpu");
  RG_CHECK(device.index < count, device, " requested but this machine has only ", count,
           " GPU(s): cuda:0..cuda:", count - 1);
}

void synchronize(const Device& device) {
  if (device.is_cpu()) return;
  check_device_available(device);
  if constexpr (kWithCuda) cuda_runtime_synchronize(device.index);
  run_deferred_checks(device);
}

void fail_no_kernel(std::string_view op, const Device& device) {
  if constexpr (!kWithCuda)
    fail(op, ": no kernel for ", device, ": this build of ringgrad has no CUDA backend");
  fail(op, ": no kernel for ", device, " yet (", op,
       " runs on the cpu only in this release; move its inputs with .to(cpu))");
}

}  // namespace rg
