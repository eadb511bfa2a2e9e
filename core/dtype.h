#pragma once
// DType: the element types a Tensor can hold, and the C++ types that stand for them.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/half.h"

namespace rg {

enum class DType : uint8_t { f32, f64, f16, bf16, i64, u8 };

std::string_view dtype_name(DType dtype);      // "f32", "f64", ...
DType dtype_from_name(std::string_view name);  // inverse of dtype_name; throws on unknown
std::size_t element_size(DType dtype);
bool is_floating(DType dtype);  // f32, f64, f16, bf16

template <class T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::f64;
};
template <>
struct dtype_of<Half> {
  static constexpr DType value = DType::f16;
};
template <>
struct dtype_of<BFloat16> {
  static constexpr DType value = DType::bf16;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::i64;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = DType::u8;
};
template <class T>
inline constexpr DType dtype_v = dtype_of<T>::value;

// The type arithmetic on T happens in: float for the 16-bit floats, T otherwise.
template <class T>
struct compute_type {
  using type = T;
};
template <>
struct compute_type<Half> {
  using type = float;
};
template <>
struct compute_type<BFloat16> {
  using type = float;
};
template <class T>
using compute_t = typename compute_type<T>::type;

std::ostream& operator<<(std::ostream& out, DType dtype);

}  // namespace rg

#include <type_traits>

namespace rg {
// Converts one element between any two of the dtypes' C++ types. 16-bit floats are built from
// float when the source is at most float precision (exact), else from double (round to odd,
// then to nearest even: one correct rounding).
template <class To, class From>
RG_HOST_DEVICE inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    if constexpr (std::is_same_v<From, float> || std::is_same_v<From, Half> ||
                  std::is_same_v<From, BFloat16> || std::is_same_v<From, uint8_t>)
      return To(static_cast<float>(v));
    else
      return To(static_cast<double>(v));
  } else if constexpr (std::is_integral_v<To> && !std::is_integral_v<From>) {
    // Floating to integer truncates toward zero through int64, as PyTorch's cast to uint8 does:
    // a negative float straight to an unsigned type is undefined in C++ (-2.7 -> u8 is 254
    // this way, on every compiler and on the GPU). NaN and values outside int64 become
    // INT64_MIN, what x86's conversion (so PyTorch on a CPU) returns, instead of undefined
    // behaviour.
    const double d = static_cast<double>(static_cast<compute_t<From>>(v));
    constexpr double kTwoTo63 = 9223372036854775808.0;
    const int64_t whole =
        d >= -kTwoTo63 && d < kTwoTo63 ? static_cast<int64_t>(d) : -9223372036854775807LL - 1;
    return static_cast<To>(whole);  // modulo 2^8 for u8: defined for unsigned types
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return static_cast<To>(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}
}  // namespace rg
