#include "train/tensorboard.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "data/png_encode.h"

namespace rg::train {
namespace {

std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) ? 0x82F63B78u ^ (c >> 1) : c >> 1;  // reflected 0x1EDC6F41
    table[i] = c;
  }
  return table;
}

// Protobuf wire format, just what Event needs.
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_key(std::string& out, int field, int wire_type) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type));
}
template <class T>
void put_fixed(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // little-endian host (x86-64, aarch64)
  out.append(bytes, sizeof(T));
}
void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}

std::string event_header(int64_t step) {
  std::string e;
  const double wall =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  put_key(e, 1, 1);
  put_fixed(e, wall);
  put_key(e, 2, 0);
  put_varint(e, static_cast<uint64_t>(step));
  return e;
}

}  // namespace

uint32_t crc32c(const void* data, std::size_t n) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, std::size_t n) {
  const uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

TensorBoardWriter::TensorBoardWriter(const std::string& folder) {
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  path_ = folder + "/events.out.tfevents." + std::to_string(now) + "." + host;
  out_.open(path_, std::ios::binary | std::ios::app);
  RG_CHECK(out_.good(), "TensorBoard: cannot create '", path_, "'");
  std::string e = event_header(0);
  put_bytes(e, 3, "brain.Event:2");
  write_event(e);
  flush();
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  std::string v;
  put_bytes(v, 1, tag);
  put_key(v, 2, 5);
  put_fixed(v, static_cast<float>(value));
  std::string summary;
  put_bytes(summary, 1, v);
  std::string e = event_header(step);
  put_bytes(e, 5, summary);
  write_event(e);
}

namespace {
// The image's bytes in PNG order (rows of interleaved channels), from (C, H, W).
std::vector<uint8_t> interleaved_pixels(const std::string& tag, const Tensor& image) {
  RG_CHECK(image.dim() == 3 && (image.size(0) == 1 || image.size(0) == 3),
           "TensorBoard add_image '", tag, "': expected an image (C, H, W) with C = 1 or 3, got ",
           image.describe());
  RG_CHECK(image.size(1) > 0 && image.size(2) > 0, "TensorBoard add_image '", tag,
           "': an empty image ", image.describe());
  const DType dtype = image.dtype();
  RG_CHECK(dtype == DType::u8 || dtype == DType::f32 || dtype == DType::f64,
           "TensorBoard add_image '", tag, "': expected u8, or f32 / f64 in [0, 1], got ",
           image.describe());
  const int64_t c = image.size(0), hw = image.size(1) * image.size(2);
  std::vector<uint8_t> out(static_cast<std::size_t>(c * hw));
  const Tensor host = image.to(Device::cpu());
  if (dtype == DType::u8) {
    const std::vector<uint8_t> v = host.to_vector<uint8_t>();
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) out[p * c + ch] = v[ch * hw + p];
    return out;
  }
  const std::vector<double> v = host.to_vector<double>();
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t p = 0; p < hw; ++p) {
      const double x = v[ch * hw + p];
      // A normalised input (mean 0, std 1) passed by mistake would otherwise saturate silently.
      RG_CHECK(x >= 0 && x <= 1, "TensorBoard add_image '", tag, "': value ", x, " at channel ", ch,
               ", pixel ", p, " is outside [0, 1] (", image.describe(),
               "); scale the image to [0, 1] or pass u8");
      out[p * c + ch] = static_cast<uint8_t>(std::lround(x * 255));
    }
  return out;
}
}  // namespace

void TensorBoardWriter::add_image(const std::string& tag, const Tensor& image, int64_t step) {
  const std::vector<uint8_t> pixels = interleaved_pixels(tag, image);
  const int64_t channels = image.size(0), height = image.size(1), width = image.size(2);
  std::string img;
  put_key(img, 1, 0);
  put_varint(img, static_cast<uint64_t>(height));
  put_key(img, 2, 0);
  put_varint(img, static_cast<uint64_t>(width));
  put_key(img, 3, 0);
  put_varint(img, static_cast<uint64_t>(channels));  // colorspace: 1 grey, 3 RGB
  put_bytes(img, 4, data::encode_png(pixels.data(), width, height, static_cast<int>(channels)));
  std::string v;
  put_bytes(v, 1, tag);
  put_bytes(v, 4, img);
  std::string summary;
  put_bytes(summary, 1, v);
  std::string e = event_header(step);
  put_bytes(e, 5, summary);
  write_event(e);
}

void TensorBoardWriter::write_event(const std::string& event) {
  const uint64_t len = event.size();
  std::string record;
  put_fixed(record, len);
  put_fixed(record, masked_crc32c(&len, sizeof len));
  record += event;
  put_fixed(record, masked_crc32c(event.data(), event.size()));
  out_.write(record.data(), static_cast<std::streamsize>(record.size()));
  RG_CHECK(out_.good(), "TensorBoard: writing '", path_, "' failed");
}

void TensorBoardWriter::flush() {
  out_.flush();
}

}  // namespace rg::train
