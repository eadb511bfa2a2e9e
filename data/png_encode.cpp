#include "data/png_encode.h"

#include <array>
#include <cstring>

#include "core/error.h"

namespace rg::data {
namespace {

std::array<uint32_t, 256> make_crc32_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;  // reflected 0x04C11DB7
    table[i] = c;
  }
  return table;
}

// PNG integers are big-endian.
void put_u32_be(std::string& out, uint32_t v) {
  const char bytes[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                         static_cast<char>(v >> 8), static_cast<char>(v)};
  out.append(bytes, 4);
}

// length | type | data | CRC-32 of type and data.
void put_chunk(std::string& out, const char type[4], const std::string& data) {
  put_u32_be(out, static_cast<uint32_t>(data.size()));
  std::string typed(type, 4);
  typed += data;
  out += typed;
  put_u32_be(out, crc32(typed.data(), typed.size()));
}

// PNG's limit on width and height is 2^31 − 1; far smaller images are all TensorBoard shows.
constexpr int64_t kMaxSide = 1 << 15;
// A stored deflate block holds at most 65535 bytes.
constexpr std::size_t kMaxStoredBlock = 65535;

}  // namespace

uint32_t crc32(const void* data, std::size_t n, uint32_t crc) {
  static const std::array<uint32_t, 256> table = make_crc32_table();
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = crc ^ 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t adler32(const void* data, std::size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t a = 1, b = 0;
  for (std::size_t i = 0; i < n; ++i) {
    a = (a + p[i]) % 65521;
    b = (b + a) % 65521;
  }
  return b << 16 | a;
}

std::string encode_png(const uint8_t* pixels, int64_t width, int64_t height, int channels) {
  RG_CHECK(channels == 1 || channels == 3, "encode_png: ", channels,
           " channels; expected 1 (grey) or 3 (RGB)");
  RG_CHECK(width > 0 && height > 0 && width <= kMaxSide && height <= kMaxSide, "encode_png: a ",
           width, "x", height, " image; each side must be in [1, ", kMaxSide, "]");
  // The image data: each row behind its filter-type byte (0: none).
  const auto row_bytes = static_cast<std::size_t>(width * channels);
  std::string raw;
  raw.reserve(static_cast<std::size_t>(height) * (row_bytes + 1));
  for (int64_t y = 0; y < height; ++y) {
    raw.push_back('\0');
    raw.append(reinterpret_cast<const char*>(pixels) + y * row_bytes, row_bytes);
  }
  // zlib: CMF 0x78 (deflate, 32 KiB window), FLG 0x01 (CMF·256 + FLG divisible by 31), the
  // stored blocks (BFINAL on the last; LEN and its complement little-endian), Adler-32.
  std::string zlib = {'\x78', '\x01'};
  for (std::size_t at = 0; at < raw.size(); at += kMaxStoredBlock) {
    const std::size_t len = std::min(kMaxStoredBlock, raw.size() - at);
    const bool last = at + len == raw.size();
    const auto l = static_cast<uint16_t>(len), nl = static_cast<uint16_t>(~len);
    const char header[5] = {static_cast<char>(last ? 1 : 0), static_cast<char>(l & 0xFF),
                            static_cast<char>(l >> 8), static_cast<char>(nl & 0xFF),
                            static_cast<char>(nl >> 8)};
    zlib.append(header, 5);
    zlib.append(raw, at, len);
  }
  put_u32_be(zlib, adler32(raw.data(), raw.size()));

  std::string png = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  put_u32_be(ihdr, static_cast<uint32_t>(width));
  put_u32_be(ihdr, static_cast<uint32_t>(height));
  // bit depth 8; colour type 0 (grey) or 2 (RGB); deflate; adaptive filtering; no interlace.
  const char rest[5] = {8, static_cast<char>(channels == 1 ? 0 : 2), 0, 0, 0};
  ihdr.append(rest, 5);
  put_chunk(png, "IHDR", ihdr);
  put_chunk(png, "IDAT", zlib);
  put_chunk(png, "IEND", "");
  return png;
}

}  // namespace rg::data
