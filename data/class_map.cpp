#include "data/class_map.h"

#include <set>

#include "core/error.h"
#include "data/files.h"
#include "data/segmentation.h"

namespace rg::data {
namespace {

bool allowed(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '+' || c == '-';
}

// A character for a message: itself when printable ASCII, else its byte (a stray byte of a
// UTF-8 sequence cannot be quoted alone: messages travel between ranks as JSON).
std::string shown(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  static const char* hex = "0123456789abcdef";
  return std::string("the byte 0x") + hex[u >> 4] + hex[u & 15];
}

}  // namespace

std::vector<std::string> parse_class_map(const std::string& text, const std::string& name) {
  RG_CHECK(static_cast<int64_t>(text.size()) <= kMaxClassMapBytes, "class map '", name, "' has ",
           text.size(), " bytes, more than the ", kMaxClassMapBytes, " of ",
           kMaxSegmentationClasses, " names");
  std::vector<std::string> names;
  std::set<std::string> seen;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    at = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::size_t number = names.size() + 1;
    RG_CHECK(static_cast<int64_t>(names.size()) < kMaxSegmentationClasses, "class map '", name,
             "': more than ", kMaxSegmentationClasses, " lines (a mask value is one byte)");
    RG_CHECK(!line.empty(), "class map '", name, "': line ", number,
             " is empty; every line names the class of its mask value (line 1: value 0)");
    RG_CHECK(line.size() <= kMaxClassNameChars, "class map '", name, "': line ", number, " has ",
             line.size(), " characters, more than ", kMaxClassNameChars);
    for (std::size_t i = 0; i < line.size(); ++i)
      RG_CHECK(allowed(line[i]), "class map '", name, "': line ", number, " holds ", shown(line[i]),
               " at column ", i + 1,
               "; class names hold letters, digits and _ . + - only (they become CSV columns)");
    RG_CHECK(seen.insert(line).second, "class map '", name, "': line ", number, " repeats '", line,
             "'; class names must be unique");
    names.push_back(line);
  }
  RG_CHECK(names.size() >= 2, "class map '", name, "' names ", names.size(),
           " class(es); a segmentation needs at least 2 (value 0 is usually the background)");
  return names;
}

std::vector<std::string> read_class_map(const std::string& path) {
  return parse_class_map(read_bounded_file(path, kMaxClassMapBytes, "class map"), path);
}

}  // namespace rg::data
