// train_cifar: trains a ResNet on CIFAR-10.
//
//   ./build/apps/train_cifar --preset quick --data ../shared/data/cifar10-jpg
//   ./build/apps/train_cifar --help
#include <iostream>

#include "apps/train_cifar/run.h"

int main(int argc, char** argv) {
  try {
    rg::apps::CommandLine cli = rg::apps::parse_command_line(argc, argv);
    if (cli.help_requested) {
      std::cout << cli.help;
      return 0;
    }
    return rg::apps::run(cli.config);
  } catch (const std::exception& e) {
    std::cerr << "\ntrain_cifar: error: " << e.what() << "\n";
    return 1;
  }
}
