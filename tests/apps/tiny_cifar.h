#pragma once
// A tiny synthetic CIFAR-10 (binary layout) and a train_cifar configuration that trains on it
// in well under a second: for whole runs of train_cifar in tests, alone and under mpirun.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "apps/train_cifar/config.h"
#include "tests/support/fixtures.h"

namespace rg::apps {

// One CIFAR-10 batch file of `count` records with label i % 10 and pseudo-random pixels.
// Textured images, not flat ones: on flat images BatchNorm divides by a near-zero variance,
// which magnifies rounding differences enough to hide whether two runs compute the same thing.
inline void write_textured_cifar_batch(const std::string& path, int count, uint32_t seed) {
  std::ofstream out(path, std::ios::binary);
  uint32_t state = seed * 2654435761u + 1;
  for (int i = 0; i < count; ++i) {
    out.put(static_cast<char>(i % 10));
    for (int p = 0; p < 3072; ++p) {
      state = state * 1664525u + 1013904223u;  // an LCG: the same bytes on every machine
      out.put(static_cast<char>(state >> 24));
    }
  }
}

// 5 training batch files and a test file of `per_file` records each.
inline std::string tiny_cifar(const std::string& name, int per_file) {
  const std::string dir = rg::testing::temp_path(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (uint32_t b = 1; b <= 5; ++b)
    write_textured_cifar_batch(dir + "/data_batch_" + std::to_string(b) + ".bin", per_file, b);
  write_textured_cifar_batch(dir + "/test_batch.bin", per_file, 6);
  return dir;
}

inline TrainConfig tiny_config(const std::string& data, const std::string& out) {
  train::Json c = train_cifar_options().defaults();
  train_cifar_options().merge(c,
                              {{"data", data},
                               {"model", "resnet20@0.25"},
                               {"epochs", 3},
                               {"batch_size", 8},
                               {"lr", 0.05},
                               {"workers", 2},
                               {"threads", 2},
                               {"out", out},
                               {"progress", false}},
                              "test");
  return train_cifar_options().read(c);
}

}  // namespace rg::apps
