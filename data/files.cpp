#include "data/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace rg::data {

std::string read_bounded_file(const std::string& path, int64_t max_bytes, const std::string& what) {
  // fstat on the descriptor that is read, not stat on the name: the file cannot be swapped
  // between the check and the read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  RG_CHECK(fd >= 0, what, " '", path, "': cannot open the file (", std::strerror(errno), ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > max_bytes) {
    const bool regular = S_ISREG(st.st_mode);
    const int64_t size = st.st_size;
    ::close(fd);
    RG_CHECK(regular, what, " '", path, "' is not a regular file");
    fail(what, " '", path, "' has ", size, " bytes, more than the limit of ", max_bytes);
  }
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // an error, or the file shrank while being read
    done += static_cast<std::size_t>(n);
  }
  const int err = errno;
  ::close(fd);
  RG_CHECK(done == bytes.size(), what, " '", path, "': reading failed after ", done, " of ",
           bytes.size(), " bytes (", std::strerror(err), ")");
  return bytes;
}

std::string clip_for_message(const std::string& text, std::size_t max_chars) {
  if (text.size() <= max_chars) return text;
  // Cut at a character boundary: a message that ends mid-way through a UTF-8 sequence cannot
  // travel in JSON (as errors do between ranks).
  std::size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "... (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace rg::data
