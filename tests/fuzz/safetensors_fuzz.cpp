// Fuzz target: parse_safetensors on arbitrary bytes. Every input must end in a tensor map or an
// rg::Error; anything else (a sanitizer report, another exception, a crash) is a finding.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    rg::SafetensorsFile f =
        rg::parse_safetensors(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    // Touch what was loaded: every byte of every tensor must be inside its buffer.
    uint64_t sum = 0;
    for (auto& [name, t] : f.tensors) {
      const auto* p = static_cast<const uint8_t*>(t.data_ptr());
      for (std::size_t i = 0; i < t.nbytes(); ++i) sum += p[i];
    }
    return static_cast<int>(sum & 0);
  } catch (const rg::Error&) {
  }
  return 0;
}
