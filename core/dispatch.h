#pragma once
// The two dispatches of every kernel:
//   - by device: dispatch_device picks the CPU or the CUDA kernel of an op, and is the one place
//     that raises "no kernel for this device";
//   - by dtype: dispatch_all / dispatch_floating / dispatch_f32_f64 turn a runtime DType into a
//     C++ type; f receives a value-initialised T and reads the type back with
//     `using T = decltype(tag);`.

#include <string_view>

#include "core/config.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"

namespace rg {

// Tags naming the backend a kernel overload is for: an op declares `f(OnCpu, ...)` in its
// <op>_cpu.cpp and `f(OnCuda, ...)` in its <op>_cuda.cu.
struct OnCpu {};
struct OnCuda {};

// Which devices an op has kernels for.
enum class Kernels { cpu_only, cpu_and_cuda };

// The standard error for an op without a kernel for `device`.
[[noreturn]] void fail_no_kernel(std::string_view op, const Device& device);

// Calls f(OnCpu{}) or f(OnCuda{}) for `device`; f is generic (`[&](auto on) {...}`), so the
// CUDA overload an op names is only instantiated — and only referenced at link time — in builds
// with the CUDA backend and for ops that say they have one.
template <Kernels kKernels, class F>
decltype(auto) dispatch_device(std::string_view op, const Device& device, F&& f) {
  if (device.is_cpu()) return f(OnCpu{});
  if constexpr (kWithCuda && kKernels == Kernels::cpu_and_cuda) {
    return f(OnCuda{});
  } else {
    fail_no_kernel(op, device);
  }
}

template <class F>
decltype(auto) dispatch_all(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32:
      return f(float{});
    case DType::f64:
      return f(double{});
    case DType::f16:
      return f(Half{});
    case DType::bf16:
      return f(BFloat16{});
    case DType::i64:
      return f(int64_t{});
    case DType::u8:
      return f(uint8_t{});
  }
  fail("dispatch: invalid dtype ", static_cast<int>(dtype));
}

// The four floating types. `op` names the caller in the error for other dtypes.
template <class F>
decltype(auto) dispatch_floating(DType dtype, std::string_view op, F&& f) {
  switch (dtype) {
    case DType::f32:
      return f(float{});
    case DType::f64:
      return f(double{});
    case DType::f16:
      return f(Half{});
    case DType::bf16:
      return f(BFloat16{});
    default:
      fail(op, ": dtype ", dtype, " is not supported (expected f32, f64, f16 or bf16)");
  }
}

// f32 and f64 only: kernels built on Eigen GEMMs, where 16-bit types go through f32.
template <class F>
decltype(auto) dispatch_f32_f64(DType dtype, std::string_view op, F&& f) {
  switch (dtype) {
    case DType::f32:
      return f(float{});
    case DType::f64:
      return f(double{});
    default:
      fail(op, ": dtype ", dtype, " is not supported (expected f32 or f64)");
  }
}

}  // namespace rg
