#include "data/npy.h"

#include <bit>
#include <cstring>
#include <optional>

#include "core/atomic_file.h"
#include "data/files.h"

namespace rg::data {
namespace {

// The data is copied as stored: little-endian only, as the host.
static_assert(std::endian::native == std::endian::little,
              "the .npy reader assumes a little-endian host");

struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// A recursive-descent reader of the one dict literal np.save writes; it accepts Python's
// spellings (either quote, a trailing comma, any whitespace, "3L" from Python 2) and nothing
// else.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& name) : s_(text), name_(name) {}

  Header parse() {
    Header h;
    std::optional<bool> has_descr, has_fortran, has_shape;
    skip_space();
    expect('{');
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal();
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        bad_if(has_descr.has_value(), "the key 'descr' appears twice");
        RG_CHECK(peek() != '[', "npy '", name_,
                 "': structured dtypes (a list in 'descr') are not supported");
        h.descr = string_literal();
        has_descr = true;
      } else if (key == "fortran_order") {
        bad_if(has_fortran.has_value(), "the key 'fortran_order' appears twice");
        h.fortran_order = boolean();
        has_fortran = true;
      } else if (key == "shape") {
        bad_if(has_shape.has_value(), "the key 'shape' appears twice");
        h.shape = tuple();
        has_shape = true;
      } else {
        bad("unknown key '" + clip_for_message(key, 40) + "'");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_space();
      bad_if(peek() != '}', "expected ',' or '}' after the value of '" + key + "'");
    }
    ++pos_;  // '}'
    skip_space();
    bad_if(pos_ != s_.size(), "unexpected text after the dict");
    bad_if(!has_descr || !has_fortran || !has_shape,
           "the header must hold 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& why) const {
    fail("npy '", name_, "': bad header (", why, ") at byte ", pos_, " of ",
         clip_for_message(s_, 120));
  }
  void bad_if(bool condition, const std::string& why) const {
    if (condition) bad(why);
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  void expect(char c) {
    bad_if(peek() != c, std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string string_literal() {
    const char quote = peek();
    bad_if(quote != '\'' && quote != '"', "expected a quoted string");
    const std::size_t start = ++pos_;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      bad_if(s_[pos_] == '\\', "escapes in strings are not supported");
      ++pos_;
    }
    bad_if(pos_ >= s_.size(), "a string is not closed");
    return s_.substr(start, pos_++ - start);
  }
  bool boolean() {
    for (const bool value : {true, false}) {
      const std::string word = value ? "True" : "False";
      if (s_.compare(pos_, word.size(), word) == 0) {
        pos_ += word.size();
        return value;
      }
    }
    bad("expected True or False");
  }
  int64_t integer() {
    bad_if(peek() < '0' || peek() > '9', "expected a dimension (a non-negative integer)");
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      bad_if(__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, peek() - '0', &v),
             "a dimension does not fit in 64 bits");
      ++pos_;
    }
    if (peek() == 'L') ++pos_;  // Python 2's long literal
    return v;
  }
  Shape tuple() {
    expect('(');
    Shape shape;
    for (;;) {
      skip_space();
      if (peek() == ')') break;
      bad_if(static_cast<int64_t>(shape.size()) >= kMaxNpyDims,
             "more than " + std::to_string(kMaxNpyDims) + " dimensions");
      shape.push_back(integer());
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      bad_if(peek() != ')', "expected ',' or ')' in the shape");
    }
    ++pos_;
    return shape;
  }

  const std::string& s_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

uint32_t little_endian(const std::string& bytes, std::size_t at, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint32_t{static_cast<uint8_t>(bytes[at + i])} << (8 * i);
  return v;
}

// A stored element type: its size, and the dtype it is read into.
struct StoredType {
  int64_t size;
  DType dtype;
  char kind;  // 'u', 'i', 'b', 'f'
};

StoredType stored_type(const std::string& descr, const std::string& name) {
  RG_CHECK(descr.size() >= 3, "npy '", name, "': unknown dtype '", clip_for_message(descr, 40),
           "'");
  const char order = descr[0];
  const std::string type = descr.substr(1);
  RG_CHECK(order != '>', "npy '", name, "': big-endian data ('", descr,
           "') is not supported; save it little-endian (arr.astype(arr.dtype.newbyteorder('<')))");
  RG_CHECK(order == '<' || order == '|' || order == '=', "npy '", name, "': unknown dtype '",
           clip_for_message(descr, 40), "'");
  static const struct {
    const char* type;
    StoredType stored;
  } kTypes[] = {
      {"u1", {1, DType::u8, 'u'}},  {"b1", {1, DType::u8, 'b'}},  {"i1", {1, DType::i64, 'i'}},
      {"i2", {2, DType::i64, 'i'}}, {"i4", {4, DType::i64, 'i'}}, {"i8", {8, DType::i64, 'i'}},
      {"f2", {2, DType::f16, 'f'}}, {"f4", {4, DType::f32, 'f'}}, {"f8", {8, DType::f64, 'f'}}};
  for (const auto& t : kTypes)
    if (type == t.type) {
      // Multi-byte data must say its byte order; '|' means "not applicable" (one byte).
      RG_CHECK(order != '|' || t.stored.size == 1, "npy '", name, "': dtype '", descr,
               "' does not say its byte order");
      return t.stored;
    }
  fail("npy '", name, "': dtype '", clip_for_message(descr, 40),
       "' is not supported (u1, b1, i1, i2, i4, i8, f2, f4, f8 are)");
}

template <class From>
void widen_to_i64(const char* src, int64_t n, int64_t* dst) {
  for (int64_t i = 0; i < n; ++i) {
    From v;
    std::memcpy(&v, src + i * static_cast<int64_t>(sizeof(From)), sizeof(From));
    dst[i] = v;
  }
}

}  // namespace

Tensor read_npy_bytes(const std::string& bytes, const std::string& name) {
  static const char kMagic[] = "\x93NUMPY";
  RG_CHECK(bytes.size() >= 10 && std::memcmp(bytes.data(), kMagic, 6) == 0, "npy '", name,
           "' is not a .npy file (it does not start with \\x93NUMPY and a version)");
  const int major = static_cast<uint8_t>(bytes[6]), minor = static_cast<uint8_t>(bytes[7]);
  RG_CHECK((major == 1 || major == 2 || major == 3) && minor == 0, "npy '", name,
           "': format version ", major, ".", minor, " is not supported (1.0, 2.0, 3.0 are)");
  // Version 1 stores the header length in 2 bytes, versions 2 and 3 in 4.
  const std::size_t start = major == 1 ? 10 : 12;
  RG_CHECK(bytes.size() >= start, "npy '", name, "' ends inside its preamble (", bytes.size(),
           " bytes)");
  const int64_t header_len = little_endian(bytes, 8, major == 1 ? 2 : 4);
  RG_CHECK(header_len <= kMaxNpyHeaderBytes, "npy '", name, "': header of ", header_len,
           " bytes, over the limit of ", kMaxNpyHeaderBytes);
  RG_CHECK(static_cast<int64_t>(bytes.size() - start) >= header_len, "npy '", name,
           "' ends inside its header (", bytes.size(), " bytes, the header needs ",
           start + header_len, ")");
  const Header h =
      HeaderParser(bytes.substr(start, static_cast<std::size_t>(header_len)), name).parse();
  const StoredType stored = stored_type(h.descr, name);
  RG_CHECK(!h.fortran_order, "npy '", name,
           "': Fortran-order arrays are not supported; save it in C order "
           "(np.save(f, np.ascontiguousarray(a)))");

  // The product of the non-zero dimensions must fit too: the tensor's strides are made of them
  // even when a zero dimension leaves it empty.
  int64_t numel = 1, nbytes = 0;
  bool has_zero = false;
  for (int64_t d : h.shape) {
    has_zero |= d == 0;
    RG_CHECK(d == 0 || !__builtin_mul_overflow(numel, d, &numel), "npy '", name, "': shape ",
             shape_str(h.shape), " has more elements than 64 bits count");
  }
  if (has_zero) numel = 0;
  RG_CHECK(!__builtin_mul_overflow(numel, stored.size, &nbytes), "npy '", name, "': shape ",
           shape_str(h.shape), " of ", h.descr, " needs more bytes than 64 bits count");
  const int64_t data_bytes = static_cast<int64_t>(bytes.size() - start) - header_len;
  RG_CHECK(data_bytes >= nbytes, "npy '", name,
           "': the data is shorter than its shape: ", data_bytes, " bytes, but ",
           shape_str(h.shape), " of ", h.descr, " needs ", nbytes);
  RG_CHECK(data_bytes == nbytes, "npy '", name, "': ", data_bytes - nbytes,
           " bytes follow the array's data (", shape_str(h.shape), " of ", h.descr,
           "); the file is not one array");

  Tensor out = empty(h.shape, {stored.dtype});
  const char* src = bytes.data() + start + header_len;
  if (stored.kind == 'i') {
    int64_t* dst = out.data<int64_t>();
    if (stored.size == 1) widen_to_i64<int8_t>(src, numel, dst);
    if (stored.size == 2) widen_to_i64<int16_t>(src, numel, dst);
    if (stored.size == 4) widen_to_i64<int32_t>(src, numel, dst);
    if (stored.size == 8) widen_to_i64<int64_t>(src, numel, dst);
  } else if (stored.kind == 'b') {
    // numpy writes 0 and 1; any other byte is still true.
    uint8_t* dst = out.data<uint8_t>();
    for (int64_t i = 0; i < numel; ++i) dst[i] = src[i] != 0;
  } else if (nbytes > 0) {
    std::memcpy(out.data_ptr(), src, static_cast<std::size_t>(nbytes));
  }
  return out;
}

Tensor read_npy(const std::string& path) {
  return read_npy_bytes(read_bounded_file(path, kMaxNpyFileBytes, "npy"), path);
}

std::string npy_bytes(const Tensor& array) {
  RG_CHECK(array.defined(), "npy: an array is required");
  const char* descr = nullptr;
  switch (array.dtype()) {
    case DType::u8:
      descr = "|u1";
      break;
    case DType::i64:
      descr = "<i8";
      break;
    case DType::f16:
      descr = "<f2";
      break;
    case DType::f32:
      descr = "<f4";
      break;
    case DType::f64:
      descr = "<f8";
      break;
    default:
      fail("npy: ", array.describe(), " has no NumPy dtype (u8, i64, f16, f32 and f64 do)");
  }
  std::string shape = "(";
  for (int64_t d = 0; d < array.dim(); ++d)
    shape += std::to_string(array.size(d)) + (array.dim() == 1 || d + 1 < array.dim() ? "," : "") +
             (d + 1 < array.dim() ? " " : "");
  shape += ")";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // np.save pads with spaces and a newline so that the data starts 64-byte aligned.
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  RG_CHECK(header.size() <= 65535, "npy: the header of ", array.describe(),
           " does not fit version 1.0");
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  const Tensor host = array.detach().to(Device::cpu()).contiguous();
  out.append(static_cast<const char*>(host.data_ptr()), host.nbytes());
  return out;
}

void write_npy(const std::string& path, const Tensor& array) {
  write_file_atomically(path, npy_bytes(array), "npy");
}

}  // namespace rg::data
