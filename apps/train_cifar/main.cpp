// train_cifar: trains a ResNet on CIFAR-10.
//
//   ./build/apps/train_cifar --preset quick --data ../shared/data/cifar10-jpg
//   ./build/apps/train_cifar --help
//   scripts/mpirun.sh 2 ./build/apps/train_cifar --preset quick --sync-bn   # 2 processes
#include <iostream>

#include "apps/train_cifar/run.h"
#include "parallel/world.h"

int main(int argc, char** argv) {
  try {
    const auto cli = rg::apps::train_cifar_options().parse(argc, argv);
    if (cli.help_requested) {
      std::cout << cli.help;
      return 0;
    }
    return rg::apps::run(cli.config);
  } catch (const std::exception& e) {
    // Under mpirun every rank may report: say which one.
    namespace par = rg::parallel;
    const bool many = par::has_world() && par::world().size() > 1;
    std::cerr << "\ntrain_cifar" << (many ? " (rank " + std::to_string(par::rank()) + ")" : "")
              << ": error: " << e.what() << "\n";
    // The other ranks would wait for this one in their next collective: end the job now.
    par::end_job_after_error("train_cifar stopped on the error above");
    return 1;
  }
}
