// doc_test_data DIR: the small data sets the doc test (doc_commands.sh) hands to the commands
// of the docs that take one, so that they run in seconds:
//   DIR/shapes2d/{train,val}/{images,masks}/  PNG images of generated shapes and their masks,
//                                             classes.txt (train_unet --data folder, predict)
//   DIR/volumes/{train,val}/{images,masks}/   .npy volumes and masks (train_unet --data npy)
//   DIR/photos/cat.png, dog.png               32x32 RGB images (predict with a CIFAR classifier)
// (the tiny CIFAR-10 comes from tests/parallel_mpi/tiny_cifar.sh).
#include <cstdio>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "core/rng.h"
#include "tests/apps/segmentation_files.h"

using namespace rg;
using namespace rg::apps::testing;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: doc_test_data DIR\n");
    return 2;
  }
  try {
    const std::string dir = argv[1];
    write_shapes_pairs(dir + "/shapes2d/train", "t", 16, {{64, 64}, {48, 56}}, 3, 100);
    write_shapes_pairs(dir + "/shapes2d/val", "v", 2, {{64, 64}}, 3, 200);
    write_bytes(dir + "/shapes2d/classes.txt", "background\ndisc\nbox\ntriangle\n");
    write_shapes_pairs(dir + "/volumes/train", "t", 4, {{16, 32, 32}}, 1, 400, true);
    write_shapes_pairs(dir + "/volumes/val", "v", 2, {{16, 32, 32}}, 1, 500, true);
    std::filesystem::create_directories(dir + "/photos");
    manual_seed(7);
    for (const char* name : {"cat", "dog"}) {
      const Tensor pixels = mul(rand({3, 32, 32}), 255.0).to(DType::u8);
      write_bytes(dir + "/photos/" + name + ".png", image_png(pixels));
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "doc_test_data: %s\n", e.what());
    return 1;
  }
}
