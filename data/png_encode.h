#pragma once
// A minimal PNG encoder for 8-bit grey or RGB images: predicted masks (data/segmentation_folder.h)
// and TensorBoard's image summaries (train/tensorboard.h).
//
// Why our own and not libpng's writer: a valid PNG needs little — the signature, IHDR, one IDAT
// holding a zlib stream of *stored* (uncompressed) deflate blocks, IEND, with CRC-32 per chunk
// and Adler-32 over the data — so writing one needs no second library interface.
// Stored blocks make the file about as large as the raw pixels — a few hundred KiB for a 256×256
// RGB image, small beside a checkpoint — and every PNG decoder reads them.

#include <cstdint>
#include <string>

namespace rg::data {

// `pixels` holds height rows of width × channels bytes (channels 1: grey, 3: RGB, interleaved).
// Throws rg::Error for a zero or oversized dimension or another channel count.
std::string encode_png(const uint8_t* pixels, int64_t width, int64_t height, int channels);

// CRC-32 (ISO 3309, as PNG and zlib use) and Adler-32 (zlib's checksum).
uint32_t crc32(const void* data, std::size_t n, uint32_t crc = 0);
uint32_t adler32(const void* data, std::size_t n);

}  // namespace rg::data
