// Fuzz target: parse_class_map (a segmentation set's classes.txt) on arbitrary bytes: names a
// CSV column can hold, or an rg::Error naming the line.
#include <cstdint>
#include <set>
#include <string>

#include "core/error.h"
#include "data/class_map.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    const std::vector<std::string> names =
        rg::data::parse_class_map(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    if (names.size() < 2 || names.size() > 256) __builtin_trap();
    std::set<std::string> seen;
    for (const std::string& n : names) {
      if (n.empty() || n.size() > rg::data::kMaxClassNameChars || !seen.insert(n).second)
        __builtin_trap();
      for (char c : n)
        if (c == ',' || c == '\n' || c == '\r' || c == '"' || c == ' ' || c < 0x21 || c > 0x7e)
          __builtin_trap();
    }
  } catch (const rg::Error&) {
  }
  return 0;
}
