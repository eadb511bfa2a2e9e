// Fuzz target: read_npy_bytes (the .npy header parser and data reader) on arbitrary bytes: an
// array whose size agrees with the bytes it came from, or an rg::Error, nothing else.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "data/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    rg::Tensor t =
        rg::data::read_npy_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    // Every element came from the file (at most 8 bytes each, one byte at least unless empty).
    if (t.numel() > static_cast<int64_t>(size)) __builtin_trap();
  } catch (const rg::Error&) {
  }
  return 0;
}
