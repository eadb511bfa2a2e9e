#pragma once
// safetensors I/O: 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {"key": "string"}}, then the raw little-endian data. Loading never runs
// code and validates everything: header size, JSON, dtypes, shapes, offsets in range and
// not overlapping, sizes that cannot overflow, a flat header. Writing is atomic: a temporary
// file in the same folder (with the umask's permissions), fsync, rename.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace rg {

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;  // cpu, contiguous
  std::map<std::string, std::string> metadata;
};

// Throws rg::Error naming the file and what is wrong.
SafetensorsFile load_safetensors(const std::string& path);
SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& what);
// Called by save_safetensors once the new file is complete and synced under its temporary
// name, just before it replaces `path`: the moment a crash must leave the old file whole.
// Fault injection uses it (parallel/faults.h, at=checkpoint). If it throws, the temporary is
// removed and the exception goes on; `path` is untouched.
using BeforeRename = std::function<void(const std::string& temporary)>;
// Tensors may live on any device and have any layout; they are written contiguous.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {},
                      const BeforeRename& before_rename = {});
// Removes the temporaries a writer of `path` killed mid-write left behind (.<name>.tmp.*
// beside it); returns how many. Call it only where no other process is writing `path`.
int remove_stale_temporaries(const std::string& path);
std::string serialize_safetensors(const std::map<std::string, Tensor>& tensors,
                                  const std::map<std::string, std::string>& metadata);

// The largest header accepted, as in the reference implementation (100 MB).
inline constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

}  // namespace rg
