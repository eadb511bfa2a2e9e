#include "apps/common/byte_size.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

#include "core/error.h"

namespace rg::apps {

namespace {
constexpr int64_t kMaxBytes = int64_t{1} << 62;  // far beyond any buffer, and no overflow

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Empty when `text` is a byte size (then in `bytes`), else what is wrong with it.
std::string read_bytes(std::string_view text, int64_t& bytes) {
  auto fail = [&](const std::string& why) {
    return "\"" + std::string(text) + "\" is not a byte size (" + why +
           "): write a number with an optional unit, B, KB/KiB, MB/MiB or GB/GiB (powers of "
           "1024), e.g. 64MB or 4096";
  };
  std::size_t end = 0;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.'))
    ++end;
  if (end == 0) return fail(text.empty() ? "empty" : "no number");
  const std::string number(text.substr(0, end));
  double value = 0;
  const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || ptr != number.data() + number.size()) return fail("not a number");
  std::string_view unit = text.substr(end);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  static const std::array<std::pair<const char*, int64_t>, 11> kUnits{{{"", 1},
                                                                       {"b", 1},
                                                                       {"k", int64_t{1} << 10},
                                                                       {"kb", int64_t{1} << 10},
                                                                       {"kib", int64_t{1} << 10},
                                                                       {"m", int64_t{1} << 20},
                                                                       {"mb", int64_t{1} << 20},
                                                                       {"mib", int64_t{1} << 20},
                                                                       {"g", int64_t{1} << 30},
                                                                       {"gb", int64_t{1} << 30},
                                                                       {"gib", int64_t{1} << 30}}};
  const std::string u = lower(unit);
  int64_t scale = 0;
  for (const auto& [name, factor] : kUnits)
    if (u == name) scale = factor;
  if (scale == 0) return fail("unknown unit \"" + std::string(unit) + "\"");
  const double value_bytes = value * static_cast<double>(scale);
  if (!(value_bytes <= static_cast<double>(kMaxBytes))) return fail("more than 2^62 bytes");
  if (value_bytes != std::floor(value_bytes)) return fail("not a whole number of bytes");
  bytes = static_cast<int64_t>(value_bytes);
  return "";
}
}  // namespace

int64_t parse_byte_size(std::string_view text, std::string_view flag) {
  int64_t bytes = 0;
  const std::string why = read_bytes(text, bytes);
  if (!why.empty()) fail(flag, ": ", why);
  return bytes;
}

std::string byte_size_text(int64_t bytes) {
  static const std::array<std::pair<const char*, int64_t>, 3> kUnits{
      {{"GiB", int64_t{1} << 30}, {"MiB", int64_t{1} << 20}, {"KiB", int64_t{1} << 10}}};
  for (const auto& [name, scale] : kUnits) {
    // Whole units, or halves and quarters (1.5KiB): short and still exact.
    if (bytes >= scale && (bytes * 4) % scale == 0) {
      char text[48];
      std::snprintf(text, sizeof text, "%g%s",
                    static_cast<double>(bytes) / static_cast<double>(scale), name);
      return text;
    }
  }
  return std::to_string(bytes) + "B";
}

CLI::Option* add_byte_size_option(CLI::App& app, const std::string& name, int64_t& bytes,
                                  const std::string& help) {
  CLI::Validator as_bytes(
      [](std::string& text) -> std::string {
        int64_t bytes = 0;
        std::string why = read_bytes(text, bytes);  // CLI11 puts the flag's name before it
        if (why.empty()) text = std::to_string(bytes);
        return why;
      },
      "SIZE");
  return app.add_option(name, bytes, help)->transform(as_bytes)->default_str(byte_size_text(bytes));
}

}  // namespace rg::apps
