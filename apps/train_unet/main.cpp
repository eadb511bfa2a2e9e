// train_unet: trains a UNet on generated shapes, 2-D or 3-D, or on your own images and masks
// (apps/README.md has the folder layout).
//
//   ./build/apps/train_unet --epochs 10                          # 2-D, 64x64, binary masks
//   ./build/apps/train_unet --data shapes3d --image-size 16x64x64 --depth 2
//   ./build/apps/train_unet --data folder cells/ --image-size 128x128   # PNG images and masks
//   ./build/apps/train_unet --data npy scans/ --image-size 32x96x96     # .npy volumes
//   scripts/mpirun.sh 2 ./build/apps/train_unet --data shapes3d --sync-bn --amp O1
//   ./build/apps/train_unet --help
#include <iostream>

#include "apps/train_unet/run.h"
#include "parallel/world.h"

int main(int argc, char** argv) {
  try {
    rg::apps::UnetCommandLine cli = rg::apps::parse_unet_command_line(argc, argv);
    if (cli.help_requested) {
      std::cout << cli.help;
      return 0;
    }
    return rg::apps::run_unet(cli.config);
  } catch (const std::exception& e) {
    namespace par = rg::parallel;  // under mpirun every rank may report: say which one
    const bool many = par::has_world() && par::world().size() > 1;
    std::cerr << "\ntrain_unet" << (many ? " (rank " + std::to_string(par::rank()) + ")" : "")
              << ": error: " << e.what() << "\n";
    // The other ranks would wait for this one in their next collective: end the job now.
    par::end_job_after_error("train_unet stopped on the error above");
    return 1;
  }
}
