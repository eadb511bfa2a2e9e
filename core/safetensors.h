#pragma once
// safetensors I/O: 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {"key": "string"}}, then the raw little-endian data. Loading never runs
// code and validates everything: header size, JSON, dtypes, shapes, offsets in range and
// not overlapping, sizes that cannot overflow, a flat header. Writing is atomic: a temporary
// file in the same folder (with the umask's permissions), fsync, rename.

#include <map>
#include <string>
#include <vector>

#include "core/atomic_file.h"  // BeforeRename; remove_stale_temporaries, for checkpoint writers
#include "core/tensor.h"

namespace rg {

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;  // cpu, contiguous
  std::map<std::string, std::string> metadata;
};

// Throws rg::Error naming the file and what is wrong.
SafetensorsFile load_safetensors(const std::string& path);
SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& what);
// Tensors may live on any device and have any layout; they are written contiguous.
// `before_rename`: see write_file_atomically.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {},
                      const BeforeRename& before_rename = {});
std::string serialize_safetensors(const std::map<std::string, Tensor>& tensors,
                                  const std::map<std::string, std::string>& metadata);

// The largest header accepted, as in the reference implementation (100 MB).
inline constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

}  // namespace rg
