#pragma once
// A segmentation set's class map: a text file naming its classes, one per line, line i (from 0)
// naming mask value i — the classes.txt beside images/ and masks/ (data/README.md):
//
//   background
//   road
//   car
//
// The names become CSV columns (test_dice_road), TensorBoard tags and checkpoint metadata, so
// they hold letters, digits and _ . + - only (ASCII), at most kMaxClassNameChars each, and are
// unique. A blank line inside the list would shift the values of the classes after it, so it
// is an error; one final newline (or CRLF line ends) is fine. 2 to kMaxSegmentationClasses
// lines. Every error names the file and the line.

#include <cstdint>
#include <string>
#include <vector>

namespace rg::data {

inline constexpr std::size_t kMaxClassNameChars = 64;
// 256 names of 64 characters and their line ends: anything larger is not a class map.
inline constexpr int64_t kMaxClassMapBytes = 256 * 66;

// The names in `text` (a class map's contents); `name` names the file in messages.
std::vector<std::string> parse_class_map(const std::string& text, const std::string& name);
// Reads (a regular file of at most kMaxClassMapBytes) and parses one class map.
std::vector<std::string> read_class_map(const std::string& path);

}  // namespace rg::data
