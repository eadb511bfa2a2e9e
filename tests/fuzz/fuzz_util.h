#pragma once
// Shared by the fuzz targets: a scratch folder of this process, and files written into it.

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
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

inline void write_file(const std::string& path, const uint8_t* data, std::size_t size) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace rg::fuzz
