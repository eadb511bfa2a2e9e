#pragma once
// Image decoding for data sets that come from strangers. The format is taken from the file's
// first bytes, never its name:
//   JPEG — libjpeg-turbo, PNG — libpng (both fuzzed continuously by OSS-Fuzz);
//   BMP  — stb_image, compiled for BMP alone.
// stb_image 2.27's JPEG and PNG decoders fall to a fuzzer within a hundred executions (an
// out-of-bounds write in the Huffman table builder, a memcpy from NULL); data/README.md gives
// the figures behind this choice. Every image's size is read from its header and checked
// against the limits below before a pixel buffer is allocated.

#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace rg::data {

// CIFAR images are 32x32 and ImageNet's average about 400x350; 16 Mpixel (48 MiB decoded, e.g.
// 4096x4096) leaves room for any classification data set while a 436-byte file declaring 590
// Mpixel is refused before it costs memory.
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 24;
inline constexpr int64_t kMaxImageSide = 16384;
// The largest image file read: a 16 Mpixel PNG stored without compression is 48 MiB.
inline constexpr int64_t kMaxImageFileBytes = int64_t{64} << 20;

enum class ImageFormat { jpeg, png, bmp };

// Decodes the bytes of one image to (3, H, W) u8 (grey images repeat their one channel, alpha
// is dropped). `name` names the image in messages. Throws rg::Error on a format it does not
// know, a size over the limits, or data the decoder rejects — and, for JPEG, on data libjpeg
// would only warn about (a truncated file decodes to grey blocks otherwise). `max_pixels` may
// lower the pixel limit (the fuzz target does, as libjpeg-turbo's own fuzzers do, so that an
// execution costs milliseconds, not the tenth of a second of a 16 Mpixel decode).
Tensor decode_image_bytes(const std::string& bytes, const std::string& name,
                          int64_t max_pixels = kMaxImagePixels);

// Reads (a regular file of at most kMaxImageFileBytes) and decodes one image file.
Tensor decode_image(const std::string& path);

}  // namespace rg::data
