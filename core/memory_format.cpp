#include "core/memory_format.h"

#include <array>
#include <string>

#include "core/error.h"
#include "core/tensor.h"

namespace rg {
namespace {

// The dims of each format from the innermost (stride 1) outwards.
constexpr std::array<std::size_t, 4> kChannelsLastOrder = {1, 3, 2, 0};       // C, W, H, N
constexpr std::array<std::size_t, 5> kChannelsLast3dOrder = {1, 4, 3, 2, 0};  // C, W, H, D, N

template <std::size_t R>
Shape strides_in_order(const Shape& shape, const std::array<std::size_t, R>& order) {
  Shape strides(R);
  int64_t stride = 1;
  for (std::size_t d : order) {
    strides[d] = stride;
    stride *= std::max<int64_t>(shape[d], 1);
  }
  return strides;
}

// Whether the strides are dense in `order` (innermost first), size-1 dims skipped.
template <class Order>
bool strides_follow(const Shape& shape, const Shape& strides, const Order& order) {
  for (int64_t s : shape)
    if (s == 0) return true;
  int64_t expected = 1;
  for (std::size_t d : order) {
    if (shape[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

std::vector<std::size_t> row_major_order(std::size_t rank) {
  std::vector<std::size_t> order(rank);
  for (std::size_t i = 0; i < rank; ++i) order[i] = rank - 1 - i;
  return order;
}

}  // namespace

std::string_view memory_format_name(MemoryFormat format) {
  switch (format) {
    case MemoryFormat::contiguous:
      return "contiguous";
    case MemoryFormat::channels_last:
      return "channels_last";
    case MemoryFormat::channels_last_3d:
      return "channels_last_3d";
  }
  return "?";
}

MemoryFormat parse_memory_format(std::string_view name) {
  for (MemoryFormat f :
       {MemoryFormat::contiguous, MemoryFormat::channels_last, MemoryFormat::channels_last_3d})
    if (name == memory_format_name(f)) return f;
  fail("memory format '", std::string(name),
       "' is not one of contiguous, channels_last, channels_last_3d");
}

Shape strides_for(const Shape& shape, MemoryFormat format, std::string_view what) {
  switch (format) {
    case MemoryFormat::contiguous:
      return contiguous_strides(shape);
    case MemoryFormat::channels_last:
      RG_CHECK(shape.size() == 4, what, ": channels_last needs a 4-D (N, C, H, W) tensor, got ",
               shape_str(shape));
      return strides_in_order(shape, kChannelsLastOrder);
    case MemoryFormat::channels_last_3d:
      RG_CHECK(shape.size() == 5, what,
               ": channels_last_3d needs a 5-D (N, C, D, H, W) tensor, got ", shape_str(shape));
      return strides_in_order(shape, kChannelsLast3dOrder);
  }
  fail(what, ": invalid memory format ", static_cast<int>(format));
}

bool has_memory_format(const Shape& shape, const Shape& strides, MemoryFormat format) {
  if (strides.size() != shape.size()) return false;
  switch (format) {
    case MemoryFormat::contiguous:
      return strides_follow(shape, strides, row_major_order(shape.size()));
    case MemoryFormat::channels_last:
      return shape.size() == 4 && strides_follow(shape, strides, kChannelsLastOrder);
    case MemoryFormat::channels_last_3d:
      return shape.size() == 5 && strides_follow(shape, strides, kChannelsLast3dOrder);
  }
  return false;
}

MemoryFormat suggest_memory_format(const Shape& shape, const Shape& strides) {
  if (has_memory_format(shape, strides, MemoryFormat::contiguous)) return MemoryFormat::contiguous;
  if (has_memory_format(shape, strides, MemoryFormat::channels_last))
    return MemoryFormat::channels_last;
  if (has_memory_format(shape, strides, MemoryFormat::channels_last_3d))
    return MemoryFormat::channels_last_3d;
  return MemoryFormat::contiguous;
}

}  // namespace rg
