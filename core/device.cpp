#include "core/device.h"

#include <charconv>
#include <ostream>

#include "core/config.h"
#include "core/dispatch.h"
#include "core/error.h"

namespace rg {

// Defined in core/cuda/cuda_device.cpp, compiled only into CUDA builds.
int cuda_runtime_device_count();

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.starts_with("cuda:")) {
    std::string_view digits = text.substr(5);
    int index = -1;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && end == digits.data() + digits.size() && index >= 0 && !digits.empty())
      return cuda(index);
  }
  fail("invalid device '", text, "' (expected cpu, cuda or cuda:N)");
}

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

std::ostream& operator<<(std::ostream& out, const Device& device) {
  return out << device.str();
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
  if (device.is_cpu()) return;
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

void fail_no_kernel(std::string_view op, const Device& device) {
  if constexpr (!kWithCuda)
    fail(op, ": no kernel for ", device, ": this build of ringgrad has no CUDA backend");
  fail(op, ": no kernel for ", device, " yet (", op,
       " runs on the cpu only in this release; move its inputs with .to(cpu))");
}

}  // namespace rg
