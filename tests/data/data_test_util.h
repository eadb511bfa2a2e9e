#pragma once
// Writes small image and CIFAR files for the data tests.

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace rg::data::testing {

// A 24-bit BMP of w x h whose pixel (x, y) has RGB (r + x, g + y, b).
inline void write_bmp(const std::string& path, int w, int h, uint8_t r, uint8_t g, uint8_t b) {
  const int row = (w * 3 + 3) / 4 * 4;
  const uint32_t size = 54 + row * h;
  std::vector<uint8_t> f(size, 0);
  auto put32 = [&](int at, uint32_t v) {
    for (int i = 0; i < 4; ++i) f[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  f[0] = 'B';
  f[1] = 'M';
  put32(2, size);
  put32(10, 54);
  put32(14, 40);
  put32(18, static_cast<uint32_t>(w));
  put32(22, static_cast<uint32_t>(h));
  f[26] = 1;
  f[28] = 24;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &f[54 + (h - 1 - y) * row + x * 3];  // bottom-up rows, BGR
      p[0] = b;
      p[1] = static_cast<uint8_t>(g + y);
      p[2] = static_cast<uint8_t>(r + x);
    }
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<char*>(f.data()), f.size());
}

// A CIFAR-10 binary batch of `labels.size()` records; record i's pixels are all i + 1.
inline void write_cifar_batch(const std::string& path, const std::vector<uint8_t>& labels) {
  std::ofstream out(path, std::ios::binary);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    out.put(static_cast<char>(labels[i]));
    std::string pixels(3072, static_cast<char>(i + 1));
    out.write(pixels.data(), pixels.size());
  }
}

}  // namespace rg::data::testing
