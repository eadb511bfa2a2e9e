#include "core/dtype.h"

#include <ostream>

#include "core/error.h"

namespace rg {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::i64:
      return "i64";
    case DType::u8:
      return "u8";
  }
  return "invalid";
}

DType dtype_from_name(std::string_view name) {
  for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::u8})
    if (dtype_name(d) == name) return d;
  fail("unknown dtype '", name, "' (expected f32, f64, f16, bf16, i64 or u8)");
}

std::size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return 4;
    case DType::f64:
      return 8;
    case DType::f16:
      return 2;
    case DType::bf16:
      return 2;
    case DType::i64:
      return 8;
    case DType::u8:
      return 1;
  }
  return 0;
}

bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16 || dtype == DType::bf16;
}

std::ostream& operator<<(std::ostream& out, DType dtype) {
  return out << dtype_name(dtype);
}

}  // namespace rg
