#pragma once
// Writing a whole file so that a reader, or a run killed mid-write, never sees half of it: the
// bytes go to a temporary file beside the target (.<name>.tmp.<pid>.<n>), which is flushed to
// disk (fsync) and then renamed onto the target. After a crash the name points at the old file
// or at the complete new one. Checkpoints (safetensors.h) and predicted masks are written so.

#include <string>

namespace rg {

// Writes `bytes` to `path` atomically; `who` names the writer in messages ("safetensors").
// Throws rg::Error naming the path and the system's reason; the temporary is removed then.
void write_file_atomically(const std::string& path, const std::string& bytes,
                           const std::string& who);

// Removes the temporaries a writer of `path` killed mid-write left behind (.<name>.tmp.*
// beside it); returns how many. Call it only where no other process is writing `path`.
int remove_stale_temporaries(const std::string& path);

}  // namespace rg
