#include "core/tensorboard.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>

#include "core/error.h"

namespace rg {
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

}  // namespace rg
