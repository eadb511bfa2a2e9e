// predict: a checkpoint's model on your own inputs.
//
//   ./build/apps/predict --checkpoint runs/cifar/best.safetensors cat.png photos/    # top-5
//   ./build/apps/predict --checkpoint runs/unet/best.safetensors scans/ --out masks/
//   ./build/apps/predict --checkpoint old.safetensors --model resnet18 --classes 10 cat.png
//   ./build/apps/predict --help
#include <iostream>
#include <string>

#include "apps/predict/run.h"

int main(int argc, char** argv) {
  try {
    rg::apps::PredictCommandLine cli = rg::apps::parse_predict_command_line(argc, argv);
    if (cli.help_requested) {
      std::cout << cli.help;
      return 0;
    }
    return rg::apps::run_predict(cli.options, std::cout);
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (what.starts_with("predict: ")) what.erase(0, 9);  // said once, in front
    std::cerr << "\npredict: error: " << what << "\n";
    return 1;
  }
}
