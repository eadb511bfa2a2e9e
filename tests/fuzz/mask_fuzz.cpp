// Fuzz target: the PNG mask reader (libpng's low-level API, no transformations) on arbitrary
// bytes, then the class check of a segmentation example: a (H, W) u8 mask or an rg::Error.
//
// libpng refuses a chunk whose CRC is wrong, and nearly every mutation breaks one: left alone,
// the fuzzer would spend its time on CRC errors. So inputs whose first byte is odd have every
// chunk's CRC recomputed first, letting mutations reach the header checks, the decompression
// and the row reading; even ones go in as they are (the CRC check itself stays fuzzed).
#include <zlib.h>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "data/mask_decode.h"
#include "data/segmentation.h"

namespace {
uint32_t big_endian(const std::string& s, std::size_t at) {
  return uint32_t{static_cast<uint8_t>(s[at])} << 24 |
         uint32_t{static_cast<uint8_t>(s[at + 1])} << 16 |
         uint32_t{static_cast<uint8_t>(s[at + 2])} << 8 | uint32_t{static_cast<uint8_t>(s[at + 3])};
}

// Chunks after the 8-byte signature: length (4), type (4), data, CRC of type and data (4).
void fix_crcs(std::string& png) {
  std::size_t at = 8;
  while (at + 12 <= png.size()) {
    const std::size_t length = big_endian(png, at);
    if (length > png.size() - at - 12) return;
    const auto* p = reinterpret_cast<const Bytef*>(png.data() + at + 4);
    const uint32_t crc = static_cast<uint32_t>(crc32(0, p, static_cast<uInt>(length + 4)));
    for (int i = 0; i < 4; ++i) png[at + 8 + length + i] = static_cast<char>(crc >> (24 - 8 * i));
    at += length + 12;
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) fix_crcs(bytes);
  try {
    rg::Tensor mask = rg::data::decode_mask_png_bytes(bytes, "fuzz");
    if (mask.dim() != 2 || mask.dtype() != rg::DType::u8) __builtin_trap();
    rg::Tensor image = rg::zeros({1, mask.size(0), mask.size(1)}, {rg::DType::u8});
    rg::data::check_segmentation_example({image, mask}, 4, "fuzz");
  } catch (const rg::Error&) {
  }
  return 0;
}
