// Prints cuDNN's JSON description of a GPU: the format of tests/fixtures/cudnn/, from which
// cuDNN builds execution plans on machines without a GPU (tests/cuda/cudnn_plan_test.cpp).
// Run it on the GPU a fixture should describe, and commit its output there. CUDA builds only.
//
//   ./build/apps/cudnn_device_json [--device 0] > tests/fixtures/cudnn/h200.json
#include <CLI/CLI.hpp>
#include <iostream>

#include "core/cuda/cudnn_backend.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"cudnn_device_json: cuDNN's JSON description of a GPU"};
  int device = 0;
  app.add_option("--device", device, "GPU index")->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    const std::string json = rg::cuda::device_properties_json(device);
    // Read back, so that what is printed is known to describe a device cuDNN accepts.
    rg::cuda::device_properties_from_json(json, "cuda:" + std::to_string(device));
    std::cout << json << "\n";
  } catch (const rg::Error& e) {
    std::cerr << "cudnn_device_json: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
