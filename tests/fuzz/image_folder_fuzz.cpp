// Fuzz target: image-folder listing. Each input line is a path under a fresh root —
// "train/cat/0.bmp" makes a file holding a 2x2 BMP, "test/dog/" a folder — then the train
// split is opened as CIFAR-10 in the image-folder layout (class lists, empty classes, the
// train/test comparison, sizes).
#include <cstdint>
#include <sstream>

#include "core/error.h"
#include "data/cifar10.h"
#include "tests/fuzz/fuzz_util.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const fs::path root = rg::fuzz::scratch("folder");
  fs::remove_all(root);
  fs::create_directories(root);
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  int made = 0;
  for (std::string line; std::getline(lines, line) && made < 64;) {
    const fs::path p(line);
    // Only plain relative paths of up to 3 parts: the target tests listing, not the file system.
    bool plain = !line.empty() && p.is_relative() && line.find('\0') == std::string::npos;
    int parts = 0;
    for (const auto& part : p) {
      plain = plain && part != ".." && part != "." && part.string().size() < 64;
      ++parts;
    }
    if (!plain || parts > 3) continue;
    std::error_code ec;
    if (line.back() == '/') {
      fs::create_directories(root / p, ec);
    } else {
      fs::create_directories((root / p).parent_path(), ec);
      if (!ec) rg::fuzz::link_tiny_bmp((root / p).string());
    }
    ++made;
  }
  try {
    auto set = rg::data::open_cifar10(root.string(), rg::data::Split::train,
                                      rg::data::DataFormat::image_folder);
    for (int64_t i = 0; i < set->size(); ++i)
      if (set->get(i).label >= set->num_classes()) __builtin_trap();
  } catch (const rg::Error&) {
  }
  return 0;
}
