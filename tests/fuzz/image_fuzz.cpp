// Fuzz target: decode_image_bytes (JPEG by libjpeg-turbo, PNG by libpng, BMP by stb_image) on
// arbitrary bytes: an image or an rg::Error, nothing else.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "data/image_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    rg::Tensor img = rg::data::decode_image_bytes(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    if (img.dim() != 3 || img.size(0) != 3) __builtin_trap();
  } catch (const rg::Error&) {
  }
  return 0;
}
