// Fuzz target: decode_image_bytes (JPEG by libjpeg-turbo, PNG by libpng, BMP by stb_image) on
// arbitrary bytes: an image or an rg::Error, nothing else.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "data/image_decode.h"

// libjpeg-turbo's and libpng's own fuzzers stop at about 1 Mpixel: a 16 Mpixel decode under
// AddressSanitizer takes a tenth of a second, and a few hundred bytes can declare one, so at the
// app's limit most of the time went to filling large grey images rather than to new inputs. The
// limit check itself is the same code either way.
constexpr int64_t kFuzzMaxPixels = int64_t{1} << 20;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    rg::Tensor img = rg::data::decode_image_bytes(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz", kFuzzMaxPixels);
    if (img.dim() != 3 || img.size(0) != 3) __builtin_trap();
  } catch (const rg::Error&) {
  }
  return 0;
}
