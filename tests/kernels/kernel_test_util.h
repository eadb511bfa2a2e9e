#pragma once
// Shared by the emulated kernel tests.

#include <array>

#include "core/dtype.h"

namespace rg::testing {

inline constexpr std::array<DType, 4> kFloatingDtypes = {DType::f32, DType::f64, DType::f16,
                                                         DType::bf16};

}  // namespace rg::testing
