#pragma once
// Writing a whole file so that a reader, or a run killed mid-write, never sees half of it: the
// bytes go to a temporary file beside the target (.<name>.tmp.<pid>.<n>), which is flushed to
// disk (fsync) and then renamed onto the target. After a crash the name points at the old file
// or at the complete new one. Checkpoints (safetensors.h) and predicted masks are written so.

#include <functional>
#include <string>

namespace rg {

// Called once the new file is complete and synced under its temporary name, just before it
// replaces `path`: the moment a crash must leave the old file whole. Fault injection uses it
// (parallel/faults.h, at=checkpoint). If it throws, the temporary is removed and the exception
// goes on; `path` is untouched.
using BeforeRename = std::function<void(const std::string& temporary)>;

// Writes `bytes` to `path` atomically; `who` names the writer in messages ("safetensors").
// Throws rg::Error naming the path and the system's reason; the temporary is removed then.
void write_file_atomically(const std::string& path, const std::string& bytes,
                           const std::string& who, const BeforeRename& before_rename = {});

// Removes the temporaries a writer of `path` killed mid-write left behind (.<name>.tmp.*
// beside it); returns how many. Call it only where no other process is writing `path`.
int remove_stale_temporaries(const std::string& path);

}  // namespace rg
