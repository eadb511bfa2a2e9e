// safetensors reading (validating every field) and atomic writing.
#include "core/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace rg {
namespace {

using json = nlohmann::json;

const char* st_name(DType d) {
  switch (d) {
    case DType::f32:
      return "F32";
    case DType::f64:
      return "F64";
    case DType::f16:
      return "F16";
    case DType::bf16:
      return "BF16";
    case DType::i64:
      return "I64";
    case DType::u8:
      return "U8";
  }
  return "?";
}

bool st_dtype(const std::string& name, DType* out) {
  for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::u8})
    if (name == st_name(d)) {
      *out = d;
      return true;
    }
  return false;
}

uint64_t read_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

// A header comes from outside: names and values in messages are cut to this many characters,
// so a 100 MB string cannot flood the terminal.
constexpr std::size_t kShownChars = 80;

std::string clip(const std::string& text) {
  if (text.size() <= kShownChars) return text;
  // Cut at a character boundary: a message that ends mid-way through a UTF-8 sequence cannot
  // travel in JSON (as errors do between ranks).
  std::size_t cut = kShownChars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "... (" + std::to_string(text.size()) + " bytes)";
}

// Dumps a value for a message. The header's depth is capped before this is called, so the
// recursion of dump() is bounded; its length is not, hence the clip.
std::string shown(const json& v) {
  return clip(v.dump());
}

// The deepest nesting a valid header has: the header object, a tensor object, its shape list
// (depths 0, 1, 2 as nlohmann counts them).
constexpr int kMaxHeaderDepth = 2;

uint64_t checked_u64(const json& v, const std::string& what, const std::string& file) {
  RG_CHECK(v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0),
           "safetensors ", file, ": ", what, " must be a non-negative integer, got ", shown(v));
  return v.get<uint64_t>();
}

}  // namespace

SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& file) {
  RG_CHECK(bytes.size() >= 8, "safetensors ", file, ": truncated, ", bytes.size(),
           " bytes (the file must start with an 8-byte header length)");
  const auto* raw = reinterpret_cast<const unsigned char*>(bytes.data());
  const uint64_t header_len = read_le64(raw);
  RG_CHECK(header_len <= kMaxSafetensorsHeader, "safetensors ", file, ": header length ",
           header_len, " exceeds the limit of ", kMaxSafetensorsHeader, " bytes");
  RG_CHECK(header_len <= bytes.size() - 8, "safetensors ", file, ": truncated, the header needs ",
           header_len, " bytes but only ", bytes.size() - 8, " follow the length");
  json header;
  // The specification's header is flat. Deeper values are refused as the parser meets them:
  // building them costs nothing much, but every recursive walk of one (dump() for a message, a
  // comparison) would overflow the stack at a depth of a few hundred thousand.
  const json::parser_callback_t depth_guard = [&](int depth, json::parse_event_t event, json&) {
    if (depth > kMaxHeaderDepth &&
        (event == json::parse_event_t::object_start || event == json::parse_event_t::array_start))
      fail("safetensors ", file, ": the header nests lists or objects deeper than ",
           kMaxHeaderDepth + 1, " levels (a safetensors header is flat)");
    return true;
  };
  try {
    header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(header_len),
                         depth_guard);
  } catch (const json::exception& e) {
    fail("safetensors ", file, ": the header is not valid JSON (", clip(e.what()), ")");
  }
  RG_CHECK(header.is_object(), "safetensors ", file, ": the header must be a JSON object");
  const uint64_t data_size = bytes.size() - 8 - header_len;
  const char* data = bytes.data() + 8 + header_len;

  SafetensorsFile result;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const std::string shown_name = clip(name);
    const json& v = it.value();
    if (name == "__metadata__") {
      RG_CHECK(v.is_object(), "safetensors ", file, ": __metadata__ must be an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        RG_CHECK(m.value().is_string(), "safetensors ", file, ": __metadata__ value of '",
                 clip(m.key()), "' must be a string");
        result.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    RG_CHECK(
        v.is_object() && v.contains("dtype") && v.contains("shape") && v.contains("data_offsets"),
        "safetensors ", file, ": tensor '", shown_name, "' needs dtype, shape and data_offsets");
    Entry e;
    e.name = name;
    RG_CHECK(v["dtype"].is_string() && st_dtype(v["dtype"].get<std::string>(), &e.dtype),
             "safetensors ", file, ": tensor '", shown_name, "' has unsupported dtype ",
             shown(v["dtype"]), " (supported: F32, F64, F16, BF16, I64, U8)");
    RG_CHECK(v["shape"].is_array(), "safetensors ", file, ": shape of '", shown_name,
             "' is not a list");
    // numel and bytes are checked against int64 so that neither wraps: a shape of 2^62 F32
    // elements would otherwise need 2^64 = 0 bytes, match data_offsets [0, 0] and be copied
    // into a buffer it overruns.
    const uint64_t max_bytes = std::numeric_limits<int64_t>::max();
    uint64_t numel = 1;
    for (const json& s : v["shape"]) {
      const uint64_t dim = checked_u64(s, "a dimension of '" + shown_name + "'", file);
      RG_CHECK(dim == 0 || numel <= max_bytes / dim, "safetensors ", file, ": shape of '",
               shown_name, "' overflows");
      numel *= dim;
      e.shape.push_back(static_cast<int64_t>(dim));
    }
    const uint64_t item = element_size(e.dtype);
    RG_CHECK(numel <= max_bytes / item, "safetensors ", file, ": tensor '", shown_name, "' of ",
             numel, " ", st_name(e.dtype), " elements overflows a 64-bit byte count");
    const uint64_t nbytes = numel * item;
    const json& off = v["data_offsets"];
    RG_CHECK(off.is_array() && off.size() == 2, "safetensors ", file, ": data_offsets of '",
             shown_name, "' must be [begin, end]");
    e.begin = checked_u64(off[0], "data_offsets of '" + shown_name + "'", file);
    e.end = checked_u64(off[1], "data_offsets of '" + shown_name + "'", file);
    RG_CHECK(e.begin <= e.end && e.end <= data_size, "safetensors ", file, ": data_offsets [",
             e.begin, ", ", e.end, "] of '", shown_name, "' are out of range (data section is ",
             data_size, " bytes)");
    RG_CHECK(e.end - e.begin == nbytes, "safetensors ", file, ": tensor '", shown_name, "' has ",
             e.end - e.begin, " bytes but shape ", clip(shape_str(e.shape)), " of ",
             st_name(e.dtype), " needs ", nbytes);
    entries.push_back(std::move(e));
  }
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < by_offset.size(); ++i)
    RG_CHECK(by_offset[i]->begin >= by_offset[i - 1]->end, "safetensors ", file, ": tensors '",
             clip(by_offset[i - 1]->name), "' and '", clip(by_offset[i]->name), "' overlap");
  for (const Entry& e : entries) {
    Tensor t = empty(e.shape, {e.dtype, Device::cpu()});
    if (e.end > e.begin) std::memcpy(t.data_ptr(), data + e.begin, e.end - e.begin);
    result.tensors[e.name] = t;
  }
  return result;
}

SafetensorsFile load_safetensors(const std::string& path) {
  // Only a regular file: a path such as /dev/zero or a FIFO would be read without end.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  RG_CHECK(!ec, "safetensors: cannot open '", path, "': ", ec.message());
  RG_CHECK(std::filesystem::is_regular_file(status), "safetensors: '", path,
           "' is not a regular file");
  std::ifstream in(path, std::ios::binary);
  RG_CHECK(in.good(), "safetensors: cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  RG_CHECK(!in.bad(), "safetensors: error reading '", path, "'");
  return parse_safetensors(buffer.str(), "'" + path + "'");
}

std::string serialize_safetensors(const std::map<std::string, Tensor>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::vector<Tensor> ordered;
  for (const auto& [name, t] : tensors) {
    RG_CHECK(name != "__metadata__", "safetensors: '__metadata__' is not a valid tensor name");
    Tensor host = t.detach().to(Device::cpu()).contiguous();
    header[name] = {{"dtype", st_name(host.dtype())},
                    {"shape", host.shape()},
                    {"data_offsets", {offset, offset + host.nbytes()}}};
    offset += host.nbytes();
    ordered.push_back(host);
  }
  std::string head = header.dump();
  head.append((8 - head.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((head.size() >> (8 * i)) & 0xFF);
  bytes += head;
  for (const Tensor& t : ordered) bytes.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  return bytes;
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata,
                      const BeforeRename& before_rename) {
  write_file_atomically(path, serialize_safetensors(tensors, metadata), "safetensors",
                        before_rename);
}

}  // namespace rg
