#pragma once
// Shared by the fuzz targets: a scratch folder of this process, and files written into it.

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace rg::fuzz {

// /tmp/rg_fuzz_<pid>/<name>, created on first use (each fuzzing process has its own).
inline std::string scratch(const std::string& name) {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("rg_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return (dir / name).string();
}

// A 2x2 24-bit BMP, for targets that need an image to exist.
inline constexpr uint8_t kTinyBmp[] = {
    'B', 'M', 70, 0, 0,  0, 0, 0, 0, 0, 54, 0, 0, 0, 40, 0, 0, 0,  2,  0,  0, 0, 2, 0,
    0,   0,   1,  0, 24, 0, 0, 0, 0, 0, 16, 0, 0, 0, 0,  0, 0, 0,  0,  0,  0, 0, 0, 0,
    0,   0,   0,  0, 0,  0, 1, 2, 3, 4, 5,  6, 0, 0, 7,  8, 9, 10, 11, 12, 0, 0};

// Plain POSIX calls, not an ofstream: under AddressSanitizer the stream's buffer (allocated,
// poisoned and quarantined per file) cost more than the write itself.
inline void write_file(const std::string& path, const uint8_t* data, std::size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;  // the reader under test then finds the file missing, which it must name
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

// A file holding kTinyBmp at `path`, as a hard link to one written once: a link is one system
// call where writing a file is three. Returns whether it made the link.
inline bool link_tiny_bmp(const char* path) {
  static const std::string original = [] {
    const std::string p = scratch("tiny.bmp");
    write_file(p, kTinyBmp, sizeof kTinyBmp);
    return p;
  }();
  return ::link(original.c_str(), path) == 0;  // an existing path keeps what it holds
}

}  // namespace rg::fuzz
