#pragma once
// Turns a runtime DType into a C++ type for a kernel: f receives a value-initialised T and
// reads the type back with `using T = decltype(tag);`.

#include <string_view>

#include "core/dtype.h"
#include "core/error.h"

namespace rg {

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
