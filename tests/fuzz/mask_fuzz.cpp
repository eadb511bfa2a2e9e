// Fuzz target: the PNG mask reader (libpng's low-level API, no transformations) on arbitrary
// bytes, then the class check of a segmentation example: a (H, W) u8 mask or an rg::Error.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "data/mask_decode.h"
#include "data/segmentation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    rg::Tensor mask = rg::data::decode_mask_png_bytes(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    if (mask.dim() != 2 || mask.dtype() != rg::DType::u8) __builtin_trap();
    rg::Tensor image = rg::zeros({1, mask.size(0), mask.size(1)}, {rg::DType::u8});
    rg::data::check_segmentation_example({image, mask}, 4, "fuzz");
  } catch (const rg::Error&) {
  }
  return 0;
}
