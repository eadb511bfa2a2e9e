#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace rg {

void write_file_atomically(const std::string& path, const std::string& bytes,
                           const std::string& who, const BeforeRename& before_rename) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  // The temporary is created with open(O_EXCL, 0666) rather than mkstemp, whose mode is 0600:
  // the kernel applies the umask, so the file gets the permissions of every other output.
  // Its name, .<file>.tmp.<pid>.<n>, is what remove_stale_temporaries() looks for.
  static std::atomic<uint64_t> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    tmp = (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                  std::to_string(counter++)))
              .string();
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  RG_CHECK(fd >= 0, who, ": cannot create a temporary file in '", dir.string(),
           "': ", std::strerror(errno));
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail(who, ": writing '", path, "' failed: ", std::strerror(err));
    }
    written += static_cast<std::size_t>(n);
  }
  // fsync before rename: after a crash the name points at either the old or the complete new
  // file, never at a partial one.
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(who, ": flushing '", path, "' failed: ", std::strerror(err));
  }
  if (before_rename) {
    try {
      before_rename(tmp);
    } catch (...) {
      ::unlink(tmp.c_str());
      throw;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(who, ": renaming onto '", path, "' failed: ", std::strerror(err));
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

int remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = "." + target.filename().string() + ".tmp.";
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(prefix) && it->is_regular_file() && fs::remove(it->path(), ec)) ++removed;
  }
  return removed;
}

}  // namespace rg
