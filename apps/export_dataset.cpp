// Writes a CIFAR-10 split as ringgrad decodes it, in raw files that a reference tool can read
// without an image library: the comparison with PyTorch's airbench94
// (tools/airbench94_reference.py, scripts/gpu_quick_check.sh's airbench step) then trains both
// frameworks on the same pixels, decoded once by ringgrad's libjpeg-turbo, where the lent GPU
// machines' Python has no PIL.
//
//   ./build/apps/export_dataset --data ../shared/data/cifar10-jpg --split train --out /tmp/x/train
//
// writes PREFIX.u8 (N x H x W x C bytes: each image height, width, channels — the layout of
// airbench's train.pt), PREFIX.labels (N little-endian int64) and PREFIX.shape ("N H W C" and the
// class names, one line each).
#include <CLI/CLI.hpp>
#include <bit>
#include <fstream>
#include <iostream>

#include "core/error.h"
#include "data/cifar10.h"

namespace {
void write(const std::string& path, const void* data, std::size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  RG_CHECK(out.good(), "export_dataset: cannot write ", path);
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"export_dataset: a CIFAR-10 split as raw u8 images and int64 labels"};
  std::string root, split = "train", format = "auto", prefix;
  app.add_option("--data", root, "CIFAR-10 folder (binary batches, image folder or CSV lists)")
      ->required();
  app.add_option("--split", split, "train or test")->check(CLI::IsMember({"train", "test"}));
  app.add_option("--data-format", format, "auto, binary, folder or csv");
  app.add_option("--out", prefix, "prefix of the files written")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    const auto dataset = rg::data::open_cifar10(
        root, split == "train" ? rg::data::Split::train : rg::data::Split::test,
        rg::data::parse_data_format(format));
    const int64_t n = dataset->size();
    RG_CHECK(n > 0, "export_dataset: ", dataset->describe(), " is empty");
    const rg::Shape shape = dataset->get(0).image.shape();  // (C, H, W)
    const int64_t c = shape[0], h = shape[1], w = shape[2];
    std::vector<uint8_t> pixels(static_cast<std::size_t>(n * c * h * w));
    std::vector<int64_t> labels(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const rg::data::Example ex = dataset->get(i);
      RG_CHECK(ex.image.shape() == shape && ex.image.dtype() == rg::DType::u8,
               "export_dataset: image ", i, " of ", dataset->describe(), " is ",
               ex.image.describe(), ", unlike image 0");
      const rg::Tensor img = ex.image.contiguous();
      const uint8_t* src = img.data<uint8_t>();
      uint8_t* dst = pixels.data() + i * c * h * w;
      for (int64_t y = 0; y < h; ++y)  // (C, H, W) -> (H, W, C)
        for (int64_t x = 0; x < w; ++x)
          for (int64_t k = 0; k < c; ++k) dst[(y * w + x) * c + k] = src[(k * h + y) * w + x];
      labels[static_cast<std::size_t>(i)] = ex.label;
    }
    static_assert(std::endian::native == std::endian::little, "labels are written as stored");
    write(prefix + ".u8", pixels.data(), pixels.size());
    write(prefix + ".labels", labels.data(), labels.size() * sizeof(int64_t));
    std::ofstream info(prefix + ".shape");
    info << n << " " << h << " " << w << " " << c << "\n";
    for (const std::string& name : dataset->class_names()) info << name << "\n";
    RG_CHECK(info.good(), "export_dataset: cannot write ", prefix, ".shape");
    std::cout << "export_dataset: " << dataset->describe() << ": " << n << " images " << h << "x"
              << w << "x" << c << " to " << prefix << ".{u8,labels,shape}\n";
  } catch (const rg::Error& e) {
    std::cerr << "export_dataset: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
