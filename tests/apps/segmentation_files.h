#pragma once
// Small segmentation data sets on disk for whole runs of train_unet and predict: generated
// shapes (data/shapes.h) written as a user would keep them — PNG images and masks, or .npy
// volumes and masks — in the layout of data/segmentation_files.h.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/npy.h"
#include "data/png_encode.h"
#include "data/segmentation_folder.h"
#include "data/shapes.h"
#include "ops/ops.h"
#include "tests/support/fixtures.h"

namespace rg::apps::testing {

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// An image (C, H, W) u8 of 1 or 3 channels as a PNG (interleaved, as PNG stores it).
inline std::string image_png(const Tensor& image) {
  const int64_t C = image.size(0), H = image.size(1), W = image.size(2);
  const Tensor src = image.contiguous();
  const uint8_t* p = src.data<uint8_t>();
  std::vector<uint8_t> pixels(static_cast<std::size_t>(C * H * W));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < H * W; ++i)
      pixels[static_cast<std::size_t>(i * C + c)] = p[c * H * W + i];
  return data::encode_png(pixels.data(), W, H, static_cast<int>(C));
}

// `count` pairs of generated shapes, one class per kind (background, disc, box, triangle; in
// volumes background, sphere, box), into dir/images and dir/masks as <prefix><i>.png (2-D) or
// .npy (3-D; images f32 in [0, 1] when `float_volumes`). Sample i has size sizes[i % n].
inline void write_shapes_pairs(const std::string& dir, const std::string& prefix, int count,
                               const std::vector<std::vector<int64_t>>& sizes, int64_t channels,
                               uint64_t seed, bool float_volumes = false) {
  std::filesystem::create_directories(dir + "/images");
  std::filesystem::create_directories(dir + "/masks");
  for (int i = 0; i < count; ++i) {
    const std::vector<int64_t>& size = sizes[static_cast<std::size_t>(i) % sizes.size()];
    data::Shapes shapes({.size = 1,
                         .image_size = size,
                         .channels = channels,
                         .seed = seed + static_cast<uint64_t>(i),
                         .classes = data::ShapeClasses::per_kind});
    const data::SegmentationExample ex = shapes.get(0);
    const std::string stem = prefix + std::to_string(i);
    if (size.size() == 2) {
      write_bytes(dir + "/images/" + stem + ".png", image_png(ex.image));
      data::write_mask_file(dir + "/masks/" + stem + ".png", ex.mask);
    } else {
      Tensor image = ex.image;
      if (float_volumes) image = mul(image.to(DType::f32), 1.0 / 255.0);
      data::write_npy(dir + "/images/" + stem + ".npy", image);
      data::write_mask_file(dir + "/masks/" + stem + ".npy", ex.mask);
    }
  }
}

inline std::string fresh_dir(const std::string& name) {
  const std::string dir = rg::testing::temp_path(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// train/ and val/ of RGB PNG pairs of several sizes — larger than a 32x32 crop, and one
// smaller (padded) — and classes.txt naming the four classes of the shapes.
inline std::string png_split(const std::string& name) {
  const std::string root = fresh_dir(name);
  write_shapes_pairs(root + "/train", "t", 16, {{32, 32}, {40, 36}, {24, 28}}, 3, 100);
  write_shapes_pairs(root + "/val", "v", 3, {{40, 80}, {32, 32}}, 3, 200);
  write_bytes(root + "/classes.txt", "background\ndisc\nbox\ntriangle\n");
  return root;
}

// train/ and val/ of .npy volume pairs (f32 images in [0, 1]) larger than an 8x16x16 crop.
inline std::string npy_split(const std::string& name) {
  const std::string root = fresh_dir(name);
  write_shapes_pairs(root + "/train", "t", 6, {{8, 24, 24}, {8, 20, 16}}, 1, 400, true);
  write_shapes_pairs(root + "/val", "v", 2, {{8, 24, 24}, {10, 16, 20}}, 1, 500, true);
  return root;
}

}  // namespace rg::apps::testing
